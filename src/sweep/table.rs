//! The tidy results table of a sweep: one row per run and I/O direction, typed
//! nullable columns (integer, float, string). It is written as CSV (readable by
//! anything, and read back here by `nvmesim plot`) and as Parquet (typed columns
//! that pandas / pyarrow / polars load with the right dtypes and no parsing).

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use parquet::basic::{LogicalType, Repetition, Type as PhysicalType};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type as SchemaType;

/// Value written into the Parquet footer's `created_by` field. Fixed (no
/// timestamps, no host data) so the same table always gives the same bytes.
const PARQUET_CREATED_BY: &str = concat!("nvmesim version ", env!("CARGO_PKG_VERSION"));

/// Type of a table column. `Int` holds `i64`, `Float` holds `f64`, `Str` holds a
/// UTF-8 string. Every column is nullable ([`Cell::Null`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColType {
    Int,
    Float,
    Str,
}

/// One value of a table. A non-null cell must match its column's [`ColType`]
/// (checked when writing Parquet; CSV prints whatever it is given).
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Float(f64),
    Str(String),
}

/// A tidy table: named, typed columns and rows of cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// Column names and types, in output order.
    pub columns: Vec<(String, ColType)>,
    /// Rows; each row has `columns.len()` cells.
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// An empty table (no rows) with the given columns.
    pub fn new(columns: Vec<(String, ColType)>) -> Table {
        Table {
            columns,
            rows: Vec::new(),
        }
    }

    /// Appends a row. The row must have one cell per column (checked with a
    /// `debug_assert`; writing Parquet also rejects a row of the wrong length).
    pub fn push(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(
            row.len(),
            self.columns.len(),
            "table row has {} cells, table has {} columns",
            row.len(),
            self.columns.len()
        );
        self.rows.push(row);
    }

    /// Index of the first column named `name`.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|(n, _)| n == name)
    }

    /// The table as CSV text: a header line of column names, then one line per
    /// row (RFC 4180 quoting by the `csv` crate, `\n` line ends). `Null` is an
    /// empty field; `Int` prints as an integer; `Float` prints with Rust's
    /// shortest round-trip `{}` formatting (so it reads back bit-identically;
    /// note an integral value such as `3.0` prints as `3`, and NaN / infinities
    /// print as `NaN` / `inf` / `-inf`); `Str` prints as is. An empty string
    /// is indistinguishable from `Null` in CSV.
    pub fn to_csv(&self) -> Result<Vec<u8>, String> {
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        w.write_record(self.columns.iter().map(|(n, _)| n.as_bytes()))
            .map_err(|e| format!("writing CSV header: {e}"))?;
        let mut fields: Vec<String> = Vec::with_capacity(self.columns.len());
        for (i, row) in self.rows.iter().enumerate() {
            fields.clear();
            fields.extend(row.iter().map(|c| match c {
                Cell::Null => String::new(),
                Cell::Int(v) => v.to_string(),
                Cell::Float(v) => format!("{v}"),
                Cell::Str(s) => s.clone(),
            }));
            w.write_record(&fields)
                .map_err(|e| format!("writing CSV row {}: {e}", i + 1))?;
        }
        w.into_inner().map_err(|e| format!("writing CSV: {}", e.error()))
    }

    /// Writes [`Table::to_csv`] to `path`. Errors name the path.
    pub fn write_csv(&self, path: &Path) -> Result<(), String> {
        let bytes = self.to_csv().map_err(|e| format!("{}: {e}", path.display()))?;
        std::fs::write(path, bytes).map_err(|e| format!("{}: cannot write CSV: {e}", path.display()))
    }

    /// The table as a Parquet file: one row group, uncompressed, every column
    /// OPTIONAL (definition levels mark nulls) with physical type INT64
    /// ([`ColType::Int`]), DOUBLE ([`ColType::Float`]) or BYTE_ARRAY annotated
    /// STRING / UTF8 ([`ColType::Str`]). The output is byte-for-byte
    /// deterministic for the same table (fixed `created_by`, no timestamps).
    ///
    /// Errors if a row has the wrong number of cells, a non-null cell does not
    /// match its column type, or two columns share a name.
    pub fn to_parquet(&self) -> Result<Vec<u8>, String> {
        self.check_for_parquet()?;
        let schema = Arc::new(self.parquet_schema()?);
        let props = Arc::new(
            WriterProperties::builder()
                .set_created_by(PARQUET_CREATED_BY.to_string())
                .build(),
        );
        let pq = |e: parquet::errors::ParquetError| format!("writing Parquet: {e}");
        let mut writer = SerializedFileWriter::new(Vec::new(), schema, props).map_err(pq)?;
        let mut row_group = writer.next_row_group().map_err(pq)?;
        let mut col = 0;
        while let Some(mut col_writer) = row_group.next_column().map_err(pq)? {
            let (name, ty) = &self.columns[col];
            let defs: Vec<i16> = self
                .rows
                .iter()
                .map(|r| i16::from(!matches!(r[col], Cell::Null)))
                .collect();
            let written = match ty {
                ColType::Int => {
                    let vals: Vec<i64> = self
                        .rows
                        .iter()
                        .filter_map(|r| match r[col] {
                            Cell::Int(v) => Some(v),
                            _ => None,
                        })
                        .collect();
                    col_writer.typed::<Int64Type>().write_batch(&vals, Some(&defs), None)
                }
                ColType::Float => {
                    let vals: Vec<f64> = self
                        .rows
                        .iter()
                        .filter_map(|r| match r[col] {
                            Cell::Float(v) => Some(v),
                            _ => None,
                        })
                        .collect();
                    col_writer.typed::<DoubleType>().write_batch(&vals, Some(&defs), None)
                }
                ColType::Str => {
                    let vals: Vec<ByteArray> = self
                        .rows
                        .iter()
                        .filter_map(|r| match &r[col] {
                            Cell::Str(s) => Some(ByteArray::from(s.as_str())),
                            _ => None,
                        })
                        .collect();
                    col_writer
                        .typed::<ByteArrayType>()
                        .write_batch(&vals, Some(&defs), None)
                }
            };
            written.map_err(|e| format!("writing Parquet column {name:?}: {e}"))?;
            col_writer.close().map_err(pq)?;
            col += 1;
        }
        row_group.close().map_err(pq)?;
        writer.into_inner().map_err(pq)
    }

    /// Writes [`Table::to_parquet`] to `path`. Errors name the path.
    pub fn write_parquet(&self, path: &Path) -> Result<(), String> {
        let bytes = self.to_parquet().map_err(|e| format!("{}: {e}", path.display()))?;
        std::fs::write(path, bytes).map_err(|e| format!("{}: cannot write Parquet: {e}", path.display()))
    }

    /// Reads a CSV file as written by [`Table::write_csv`] (or by hand: a header
    /// line, then rows with as many fields as the header). Errors name the path
    /// and, where there is one, the line.
    ///
    /// Column types are inferred, see [`Table::from_csv_bytes`].
    pub fn read_csv(path: &Path) -> Result<Table, String> {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| format!("{name}: cannot read: {e}"))?;
        Table::from_csv_bytes(&bytes, &name)
    }

    /// Parses CSV text (see [`Table::read_csv`]); `name_for_errors` (usually the
    /// path) prefixes error messages.
    ///
    /// Column types are inferred per column: if every non-empty field parses as
    /// `i64` the column is [`ColType::Int`]; else if every non-empty field
    /// parses as `f64` it is [`ColType::Float`]; else [`ColType::Str`]. Empty
    /// fields are [`Cell::Null`]; a column with only empty fields is `Str`.
    /// Consequences: a `Float` column whose values are all integral (`3.0` is
    /// written as `3`) reads back as `Int`, a `Str` column whose values all look
    /// like numbers reads back as a number column, and an empty string reads
    /// back as `Null`. Fields are not trimmed.
    pub fn from_csv_bytes(bytes: &[u8], name_for_errors: &str) -> Result<Table, String> {
        let at = |e: &csv::Error| -> String {
            let line = match e.kind() {
                csv::ErrorKind::Utf8 { pos: Some(p), .. } => Some(p.line()),
                csv::ErrorKind::UnequalLengths { pos: Some(p), .. } => Some(p.line()),
                csv::ErrorKind::Deserialize { pos: Some(p), .. } => Some(p.line()),
                _ => None,
            };
            match line {
                Some(l) => format!("{name_for_errors}: line {l}: {e}"),
                None => format!("{name_for_errors}: {e}"),
            }
        };
        let mut rdr = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(false)
            .from_reader(bytes);
        let header = rdr.headers().map_err(|e| at(&e))?.clone();
        let ncols = header.len();
        let mut raw: Vec<Vec<String>> = Vec::new();
        for rec in rdr.records() {
            let rec = rec.map_err(|e| at(&e))?;
            if rec.len() != ncols {
                // `flexible(false)` already rejects this; kept as a guard.
                let line = rec.position().map(|p| p.line()).unwrap_or(0);
                return Err(format!(
                    "{name_for_errors}: line {line}: {} fields, header has {ncols}",
                    rec.len()
                ));
            }
            raw.push(rec.iter().map(str::to_string).collect());
        }

        let types: Vec<ColType> = (0..ncols)
            .map(|c| {
                let mut present = raw.iter().map(|r| r[c].as_str()).filter(|s| !s.is_empty()).peekable();
                if present.peek().is_none() {
                    ColType::Str
                } else if present.clone().all(|s| s.parse::<i64>().is_ok()) {
                    ColType::Int
                } else if present.all(|s| s.parse::<f64>().is_ok()) {
                    ColType::Float
                } else {
                    ColType::Str
                }
            })
            .collect();

        let mut table = Table::new(header.iter().map(str::to_string).zip(types.iter().copied()).collect());
        table.rows = raw
            .into_iter()
            .map(|r| {
                r.into_iter()
                    .zip(&types)
                    .map(|(s, ty)| {
                        if s.is_empty() {
                            return Cell::Null;
                        }
                        // The type was chosen so that every non-empty field parses.
                        match ty {
                            ColType::Int => s.parse().map(Cell::Int).unwrap_or(Cell::Null),
                            ColType::Float => s.parse().map(Cell::Float).unwrap_or(Cell::Null),
                            ColType::Str => Cell::Str(s),
                        }
                    })
                    .collect()
            })
            .collect();
        Ok(table)
    }

    /// Rejects what Parquet cannot represent: ragged rows, cells of the wrong
    /// type, duplicate column names.
    fn check_for_parquet(&self) -> Result<(), String> {
        let mut seen = HashSet::new();
        for (name, _) in &self.columns {
            if !seen.insert(name.as_str()) {
                return Err(format!("duplicate column name {name:?}"));
            }
        }
        for (i, row) in self.rows.iter().enumerate() {
            if row.len() != self.columns.len() {
                return Err(format!(
                    "row {} has {} cells, table has {} columns",
                    i + 1,
                    row.len(),
                    self.columns.len()
                ));
            }
            for (cell, (name, ty)) in row.iter().zip(&self.columns) {
                let ok = matches!(
                    (cell, ty),
                    (Cell::Null, _)
                        | (Cell::Int(_), ColType::Int)
                        | (Cell::Float(_), ColType::Float)
                        | (Cell::Str(_), ColType::Str)
                );
                if !ok {
                    return Err(format!(
                        "row {}, column {name:?} ({ty:?}): cell {cell:?} has the wrong type",
                        i + 1
                    ));
                }
            }
        }
        Ok(())
    }

    /// The Parquet schema: a flat message of OPTIONAL primitive fields. Built
    /// with the types builder (not the text parser) so any column name works.
    fn parquet_schema(&self) -> Result<SchemaType, String> {
        let fields = self
            .columns
            .iter()
            .map(|(name, ty)| {
                let builder = match ty {
                    ColType::Int => SchemaType::primitive_type_builder(name, PhysicalType::INT64),
                    ColType::Float => SchemaType::primitive_type_builder(name, PhysicalType::DOUBLE),
                    ColType::Str => SchemaType::primitive_type_builder(name, PhysicalType::BYTE_ARRAY)
                        .with_logical_type(Some(LogicalType::String)),
                };
                builder
                    .with_repetition(Repetition::OPTIONAL)
                    .build()
                    .map(Arc::new)
                    .map_err(|e| format!("Parquet schema, column {name:?}: {e}"))
            })
            .collect::<Result<Vec<_>, String>>()?;
        SchemaType::group_type_builder("schema")
            .with_fields(fields)
            .build()
            .map_err(|e| format!("Parquet schema: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;

    fn sample() -> Table {
        let mut t = Table::new(vec![
            ("run".to_string(), ColType::Int),
            ("iops".to_string(), ColType::Float),
            ("rw".to_string(), ColType::Str),
            ("note".to_string(), ColType::Str),
        ]);
        t.push(vec![
            Cell::Int(0),
            Cell::Float(0.1),
            Cell::Str("read".into()),
            Cell::Str("a, \"quoted\" note".into()),
        ]);
        t.push(vec![Cell::Int(-7), Cell::Null, Cell::Str("write".into()), Cell::Null]);
        t.push(vec![
            Cell::Null,
            Cell::Float(1e-9),
            Cell::Null,
            Cell::Str("multi\nline".into()),
        ]);
        t.push(vec![
            Cell::Int(i64::MAX),
            Cell::Float(123456.789),
            Cell::Str("trim".into()),
            Cell::Str("ünïcödé".into()),
        ]);
        t
    }

    /// A path in the system temp dir, unique per test and process.
    fn tmp_path(tag: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("nvmesim-table-{}-{tag}", std::process::id()))
    }

    #[test]
    fn csv_round_trip_all_types_nulls_quoting() {
        let t = sample();
        let bytes = t.to_csv().unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.starts_with("run,iops,rw,note\n"), "{text}");
        assert!(text.contains("\"a, \"\"quoted\"\" note\""), "{text}");
        assert!(text.contains("\n-7,,write,\n"), "{text}");
        let back = Table::from_csv_bytes(&bytes, "mem").unwrap();
        assert_eq!(back, t);
        assert_eq!(back.column_index("rw"), Some(2));
        assert_eq!(back.column_index("nope"), None);
    }

    #[test]
    fn csv_floats_read_back_exactly() {
        let vals = [
            0.1,
            1e-9,
            123456.789,
            1.0 / 3.0,
            -2.5e300,
            5e-324,
            f64::MAX,
            0.30000000000000004,
        ];
        let mut t = Table::new(vec![("x".to_string(), ColType::Float)]);
        for v in vals {
            t.push(vec![Cell::Float(v)]);
        }
        t.push(vec![Cell::Null]);
        let back = Table::from_csv_bytes(&t.to_csv().unwrap(), "mem").unwrap();
        assert_eq!(back.columns, t.columns);
        for (i, v) in vals.iter().enumerate() {
            match back.rows[i][0] {
                Cell::Float(x) => assert_eq!(x.to_bits(), v.to_bits(), "row {i}: {x} vs {v}"),
                ref c => panic!("row {i}: {c:?}"),
            }
        }
        // A single-column null row must survive (not be taken as a blank line).
        assert_eq!(back.rows.len(), vals.len() + 1);
        assert_eq!(back.rows[vals.len()][0], Cell::Null);
    }

    #[test]
    fn csv_type_inference() {
        let csv = b"a,b,c,d\n1,1,x,\n2,2.5,3,\n,,,\n";
        let t = Table::from_csv_bytes(csv, "mem").unwrap();
        let types: Vec<ColType> = t.columns.iter().map(|c| c.1).collect();
        assert_eq!(types, vec![ColType::Int, ColType::Float, ColType::Str, ColType::Str]);
        assert_eq!(
            t.rows[1],
            vec![Cell::Int(2), Cell::Float(2.5), Cell::Str("3".into()), Cell::Null]
        );
        assert_eq!(t.rows[2], vec![Cell::Null; 4]);
        // Integral floats print without a fraction and read back as Int (documented).
        let mut f = Table::new(vec![("f".to_string(), ColType::Float)]);
        f.push(vec![Cell::Float(3.0)]);
        let back = Table::from_csv_bytes(&f.to_csv().unwrap(), "mem").unwrap();
        assert_eq!(back.columns[0].1, ColType::Int);
        assert_eq!(back.rows[0][0], Cell::Int(3));
    }

    #[test]
    fn csv_errors_name_path_and_line() {
        let err = Table::from_csv_bytes(b"a,b\n1,2\n3\n", "some/file.csv").unwrap_err();
        assert!(err.starts_with("some/file.csv: line 3:"), "{err}");
        let missing = tmp_path("missing.csv");
        let err = Table::read_csv(&missing).unwrap_err();
        assert!(err.contains(&missing.display().to_string()), "{err}");
    }

    #[test]
    fn csv_file_round_trip() {
        let t = sample();
        let p = tmp_path("rt.csv");
        t.write_csv(&p).unwrap();
        let back = Table::read_csv(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn parquet_is_deterministic() {
        let t = sample();
        let a = t.to_parquet().unwrap();
        let b = t.to_parquet().unwrap();
        assert!(a.len() > 8);
        assert_eq!(a, b);
        let mut t2 = t.clone();
        t2.rows[0][0] = Cell::Int(1);
        assert_ne!(t2.to_parquet().unwrap(), a);
    }

    #[test]
    fn parquet_rejects_bad_cells() {
        let mut t = Table::new(vec![("x".to_string(), ColType::Int)]);
        t.rows.push(vec![Cell::Str("no".into())]);
        assert!(t.to_parquet().unwrap_err().contains("wrong type"));
        let dup = Table::new(vec![("x".to_string(), ColType::Int), ("x".to_string(), ColType::Str)]);
        assert!(dup.to_parquet().unwrap_err().contains("duplicate"));
    }

    #[test]
    fn parquet_reads_back_with_parquet_reader() {
        let mut t = sample();
        t.push(vec![
            Cell::Int(1),
            Cell::Float(f64::MIN_POSITIVE),
            Cell::Str(String::new()),
            Cell::Null,
        ]);
        let p = tmp_path("rt.parquet");
        t.write_parquet(&p).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[..4], b"PAR1");
        assert_eq!(&bytes[bytes.len() - 4..], b"PAR1");
        assert_eq!(bytes, t.to_parquet().unwrap());

        let reader = SerializedFileReader::new(std::fs::File::open(&p).unwrap()).unwrap();
        std::fs::remove_file(&p).unwrap();
        let meta = reader.metadata();
        assert_eq!(meta.num_row_groups(), 1);
        assert_eq!(meta.file_metadata().num_rows(), t.rows.len() as i64);
        assert_eq!(meta.file_metadata().created_by(), Some(PARQUET_CREATED_BY));
        let schema = meta.file_metadata().schema_descr();
        assert_eq!(schema.num_columns(), t.columns.len());
        for (i, (name, ty)) in t.columns.iter().enumerate() {
            let c = schema.column(i);
            assert_eq!(c.name(), name);
            assert_eq!(c.max_def_level(), 1, "{name} must be OPTIONAL");
            let want = match ty {
                ColType::Int => PhysicalType::INT64,
                ColType::Float => PhysicalType::DOUBLE,
                ColType::Str => PhysicalType::BYTE_ARRAY,
            };
            assert_eq!(c.physical_type(), want, "{name}");
            if *ty == ColType::Str {
                assert_eq!(c.logical_type_ref(), Some(&LogicalType::String), "{name}");
            }
        }

        let mut n = 0;
        for (r, row) in reader.get_row_iter(None).unwrap().enumerate() {
            let row = row.unwrap();
            let fields: Vec<(&String, &Field)> = row.get_column_iter().collect();
            assert_eq!(fields.len(), t.columns.len());
            for (c, (name, field)) in fields.into_iter().enumerate() {
                assert_eq!(name, &t.columns[c].0);
                let got = match field {
                    Field::Null => Cell::Null,
                    Field::Long(v) => Cell::Int(*v),
                    Field::Double(v) => Cell::Float(*v),
                    Field::Str(s) => Cell::Str(s.clone()),
                    other => panic!("row {r} col {name}: unexpected field {other:?}"),
                };
                assert_eq!(got, t.rows[r][c], "row {r} col {name}");
            }
            n += 1;
        }
        assert_eq!(n, t.rows.len());
    }

    #[test]
    fn parquet_empty_table() {
        let t = Table::new(vec![("a".to_string(), ColType::Int), ("b".to_string(), ColType::Str)]);
        let bytes = t.to_parquet().unwrap();
        assert_eq!(&bytes[..4], b"PAR1");
        assert_eq!(&bytes[bytes.len() - 4..], b"PAR1");
    }
}
