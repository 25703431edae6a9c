//! Turns a decoded message into readable text (YAML-like, long arrays shortened) or one JSON line.

use serde::Serialize;
use serde_json::Value;
use std::fmt::Write;

/// One JSON object on one line.
pub fn json_line<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// Indented `key: value` text; arrays longer than `truncate` show their first elements and
/// their length, as `ros2 topic echo` does.
pub fn text<T: Serialize>(value: &T, truncate: usize) -> String {
    let value = serde_json::to_value(value).unwrap_or(Value::Null);
    let mut out = String::new();
    write_value(&mut out, &value, 0, truncate);
    out.push_str("---");
    out
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{s}'"),
        other => other.to_string(),
    }
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Object(_) | Value::Array(_))
}

fn write_value(out: &mut String, value: &Value, indent: usize, truncate: usize) {
    let pad = "  ".repeat(indent);
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match v {
                    Value::Object(_) => {
                        let _ = writeln!(out, "{pad}{key}:");
                        write_value(out, v, indent + 1, truncate);
                    }
                    Value::Array(items) if items.iter().all(is_scalar) => {
                        let _ = writeln!(out, "{pad}{key}: {}", inline_array(items, truncate));
                    }
                    Value::Array(items) => {
                        let _ = writeln!(out, "{pad}{key}:");
                        for item in items.iter().take(truncate) {
                            let mut nested = String::new();
                            write_value(&mut nested, item, indent + 2, truncate);
                            let nested = nested.trim_start();
                            let _ = write!(out, "{pad}- {nested}");
                        }
                        if items.len() > truncate {
                            let _ = writeln!(out, "{pad}- '... {} items in all'", items.len());
                        }
                    }
                    _ => {
                        let _ = writeln!(out, "{pad}{key}: {}", scalar(v));
                    }
                }
            }
        }
        other => {
            let _ = writeln!(out, "{pad}{}", scalar(other));
        }
    }
}

fn inline_array(items: &[Value], truncate: usize) -> String {
    let shown: Vec<String> = items.iter().take(truncate).map(scalar).collect();
    if items.len() > truncate {
        format!("[{}, '...'] ({} items)", shown.join(", "), items.len())
    } else {
        format!("[{}]", shown.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use convoy_core::messages::{Image, SensorHeader};

    #[test]
    fn text_shortens_long_arrays() {
        let image = Image {
            header: SensorHeader {
                agent: "ego".into(),
                ..SensorHeader::default()
            },
            width: 2,
            data: (0..100).collect(),
            ..Image::default()
        };
        let text = text(&image, 4);
        assert!(text.contains("agent: 'ego'"), "{text}");
        assert!(
            text.contains("data: [0, 1, 2, 3, '...'] (100 items)"),
            "{text}"
        );
        assert!(json_line(&image).starts_with("{\"header\":{\"agent\":\"ego\""));
    }
}
