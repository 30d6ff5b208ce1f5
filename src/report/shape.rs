//! Structural comparison of two fio JSON documents: every key the reference
//! has must be in ours, at the same place, with the same JSON type, and
//! numbers must agree on integer vs float as fio prints them. Values are not
//! compared. Arrays are compared element-wise against the reference's first
//! element.

use serde_json::Value;

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn walk(path: &str, r: &Value, o: &Value, out: &mut Vec<String>) {
    if kind(r) != kind(o) {
        out.push(format!("{path}: reference has {}, ours {}", kind(r), kind(o)));
        return;
    }
    match (r, o) {
        (Value::Object(rm), Value::Object(om)) => {
            for (k, rv) in rm {
                // Dynamic keys: percentile values and histogram bins depend on the data.
                if path.ends_with("/bins") {
                    break;
                }
                match om.get(k) {
                    Some(ov) => walk(&format!("{path}/{k}"), rv, ov, out),
                    None => out.push(format!("{path}/{k}: missing")),
                }
            }
        }
        (Value::Array(ra), Value::Array(oa)) => {
            if let Some(r0) = ra.first() {
                if oa.len() < ra.len() {
                    out.push(format!(
                        "{path}: reference has {} elements, ours {}",
                        ra.len(),
                        oa.len()
                    ));
                }
                for (i, ov) in oa.iter().enumerate() {
                    let rv = ra.get(i).unwrap_or(r0);
                    walk(&format!("{path}[{i}]"), rv, ov, out);
                }
            }
        }
        _ => {}
    }
}

/// Differences in shape between `reference` and `ours` (empty when ours has everything).
pub fn shape_diff(reference: &Value, ours: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk("", reference, ours, &mut out);
    out
}
