//! A tiny JSON value and printer with fio's layout: 2-space indent,
//! `"key" : value`, floats always with six decimals (`%f`), integers plain,
//! keys in insertion order, strings escaping only `"` and `\` (json.c).

#[derive(Debug, Clone)]
pub enum J {
    Int(i64),
    Float(f64),
    Str(String),
    Obj(Vec<(String, J)>),
    Arr(Vec<J>),
}

impl J {
    pub fn obj() -> J {
        J::Obj(Vec::new())
    }

    /// Append a key (objects only).
    pub fn put(&mut self, k: &str, v: J) -> &mut J {
        if let J::Obj(v0) = self {
            v0.push((k.to_string(), v));
        }
        self
    }

    pub fn int(v: u64) -> J {
        J::Int(v as i64)
    }

    pub fn float(v: f64) -> J {
        J::Float(if v.is_finite() { v } else { 0.0 })
    }

    pub fn str(s: &str) -> J {
        J::Str(s.to_string())
    }

    /// From a serde_json value (the simulator's extras), numbers kept as they are.
    pub fn from_serde(v: &serde_json::Value) -> J {
        match v {
            serde_json::Value::Null => J::Str(String::new()),
            serde_json::Value::Bool(b) => J::Int(*b as i64),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => J::Int(i),
                None => match n.as_u64() {
                    Some(u) => J::Int(u as i64),
                    None => J::float(n.as_f64().unwrap_or(0.0)),
                },
            },
            serde_json::Value::String(s) => J::Str(s.clone()),
            serde_json::Value::Array(a) => J::Arr(a.iter().map(J::from_serde).collect()),
            serde_json::Value::Object(o) => J::Obj(o.iter().map(|(k, v)| (k.clone(), J::from_serde(v))).collect()),
        }
    }

    pub fn write(&self, out: &mut String, indent: usize) {
        match self {
            J::Int(i) => out.push_str(&i.to_string()),
            J::Float(f) => out.push_str(&format!("{f:.6}")),
            J::Str(s) => {
                out.push('"');
                for c in s.chars() {
                    if c == '"' || c == '\\' {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out.push('"');
            }
            J::Obj(kv) => {
                if kv.is_empty() {
                    out.push_str("{}");
                    return;
                }
                out.push_str("{\n");
                for (i, (k, v)) in kv.iter().enumerate() {
                    push_indent(out, indent + 2);
                    out.push('"');
                    out.push_str(k);
                    out.push_str("\" : ");
                    v.write(out, indent + 2);
                    if i + 1 < kv.len() {
                        out.push(',');
                    }
                    out.push('\n');
                }
                push_indent(out, indent);
                out.push('}');
            }
            J::Arr(a) => {
                if a.is_empty() {
                    out.push_str("[]");
                    return;
                }
                out.push_str("[\n");
                for (i, v) in a.iter().enumerate() {
                    push_indent(out, indent + 2);
                    v.write(out, indent + 2);
                    if i + 1 < a.len() {
                        out.push(',');
                    }
                    out.push('\n');
                }
                push_indent(out, indent);
                out.push(']');
            }
        }
    }
}

fn push_indent(out: &mut String, n: usize) {
    for _ in 0..n {
        out.push(' ');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_fio() {
        let mut o = J::obj();
        o.put("a", J::Int(1))
            .put("b", J::float(2.0))
            .put("c \"q\"", J::str("x\"y"));
        let mut inner = J::obj();
        inner.put("k", J::Arr(vec![J::Int(1), J::Int(2)]));
        o.put("d", inner);
        let mut s = String::new();
        o.write(&mut s, 0);
        assert_eq!(
            s,
            "{\n  \"a\" : 1,\n  \"b\" : 2.000000,\n  \"c \"q\"\" : \"x\\\"y\",\n  \"d\" : {\n    \"k\" : [\n      1,\n      2\n    ]\n  }\n}"
        );
    }
}
