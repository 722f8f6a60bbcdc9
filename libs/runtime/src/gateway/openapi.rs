//! The OpenAPI 3 document of the HTTP/JSON API, made from the descriptor set: one `POST` path
//! per unary method, one schema per message in the proto3 JSON mapping (camelCase field names,
//! 64-bit integers as strings, enums by name, timestamps in RFC 3339). Nothing in it is written
//! by hand, so it cannot drift from the messages the services take.

use std::collections::BTreeMap;

use prost_reflect::{
    FieldDescriptor, Kind, MessageDescriptor, MethodDescriptor, ServiceDescriptor,
};
use serde_json::{Value, json};

/// The component that names an error reply.
const ERROR: &str = "Error";

/// Whether the gateway serves `method` (one request, one reply; a stream is gRPC only).
pub(super) fn is_unary(method: &MethodDescriptor) -> bool {
    !method.is_client_streaming() && !method.is_server_streaming()
}

/// The HTTP path of `method`: its gRPC path, `/<package>.<Service>/<Method>`.
pub(super) fn path_of(method: &MethodDescriptor) -> String {
    format!("/{}/{}", method.parent_service().full_name(), method.name())
}

/// The OpenAPI 3.0 document of `services`' unary methods.
pub fn document(services: &[ServiceDescriptor]) -> Value {
    let mut paths = serde_json::Map::new();
    let mut schemas = BTreeMap::new();
    schemas.insert(ERROR.to_owned(), error_schema());
    for service in services {
        for method in service.methods().filter(is_unary) {
            collect(&method.input(), &mut schemas);
            collect(&method.output(), &mut schemas);
            paths.insert(path_of(&method), operation(service, &method));
        }
    }
    let title = services
        .iter()
        .map(|s| s.name().to_owned())
        .collect::<Vec<_>>()
        .join(", ");
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": format!("ontoloop {title} (HTTP/JSON)"),
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Every unary gRPC method as POST <gRPC path>, the body and the reply in the proto3 JSON mapping. Errors carry the gRPC code's name and the reason."
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } }
        },
        "security": [ { "bearer": [] } ]
    })
}

/// The `post` operation of one method.
fn operation(service: &ServiceDescriptor, method: &MethodDescriptor) -> Value {
    json!({
        "post": {
            "operationId": format!("{}_{}", service.name(), method.name()),
            "tags": [service.name()],
            "requestBody": {
                "required": true,
                "content": { "application/json": { "schema": reference(&method.input()) } }
            },
            "responses": {
                "200": {
                    "description": format!("The {} reply.", method.output().name()),
                    "content": { "application/json": { "schema": reference(&method.output()) } }
                },
                "default": {
                    "description": "The call failed: the gRPC code's name and the reason.",
                    "content": { "application/json": { "schema": { "$ref": format!("#/components/schemas/{ERROR}") } } }
                }
            }
        }
    })
}

/// `{"code","message"}`, the body of every error reply.
fn error_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "code": { "type": "string", "description": "The gRPC status code's name, e.g. INVALID_ARGUMENT." },
            "message": { "type": "string", "description": "Why, naming the field or limit at fault." }
        },
        "required": ["code", "message"]
    })
}

/// A reference to `message`'s schema, or the inline schema of a well-known type.
fn reference(message: &MessageDescriptor) -> Value {
    well_known(message).unwrap_or_else(
        || json!({ "$ref": format!("#/components/schemas/{}", message.full_name()) }),
    )
}

/// The JSON mapping of the well-known types this API uses.
fn well_known(message: &MessageDescriptor) -> Option<Value> {
    match message.full_name() {
        "google.protobuf.Timestamp" => Some(json!({ "type": "string", "format": "date-time" })),
        "google.protobuf.Duration" => {
            Some(json!({ "type": "string", "pattern": "^-?[0-9]+(\\.[0-9]+)?s$" }))
        }
        _ => None,
    }
}

/// Adds `message`'s schema and those of every message it holds.
fn collect(message: &MessageDescriptor, schemas: &mut BTreeMap<String, Value>) {
    if well_known(message).is_some() || schemas.contains_key(message.full_name()) {
        return;
    }
    // Reserved first, so a message that holds itself ends the walk.
    schemas.insert(message.full_name().to_owned(), Value::Null);
    let mut properties = serde_json::Map::new();
    for field in message.fields() {
        properties.insert(field.json_name().to_owned(), field_schema(&field, schemas));
    }
    schemas.insert(
        message.full_name().to_owned(),
        json!({ "type": "object", "properties": properties, "additionalProperties": false }),
    );
}

/// A field's schema: its kind's, in an array when repeated, in an object when a map.
fn field_schema(field: &FieldDescriptor, schemas: &mut BTreeMap<String, Value>) -> Value {
    if field.is_map() {
        let Kind::Message(entry) = field.kind() else {
            return json!({ "type": "object" });
        };
        let value = entry.map_entry_value_field();
        return json!({ "type": "object", "additionalProperties": kind_schema(&value.kind(), schemas) });
    }
    let item = kind_schema(&field.kind(), schemas);
    if field.is_list() {
        json!({ "type": "array", "items": item })
    } else {
        item
    }
}

/// The JSON schema of one value of `kind` in the proto3 JSON mapping.
fn kind_schema(kind: &Kind, schemas: &mut BTreeMap<String, Value>) -> Value {
    match kind {
        Kind::Double | Kind::Float => json!({ "type": "number" }),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            json!({ "type": "integer", "format": "int32", "minimum": i32::MIN, "maximum": i32::MAX })
        }
        Kind::Uint32 | Kind::Fixed32 => {
            json!({ "type": "integer", "format": "int64", "minimum": 0, "maximum": u32::MAX })
        }
        // 64-bit integers are strings in the JSON mapping (a JSON number loses precision).
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            json!({ "type": "string", "pattern": "^-?[0-9]{1,19}$" })
        }
        Kind::Uint64 | Kind::Fixed64 => json!({ "type": "string", "pattern": "^[0-9]{1,20}$" }),
        Kind::Bool => json!({ "type": "boolean" }),
        Kind::String => json!({ "type": "string" }),
        Kind::Bytes => json!({ "type": "string", "format": "byte" }),
        Kind::Enum(e) => {
            let names: Vec<String> = e.values().map(|v| v.name().to_owned()).collect();
            json!({ "type": "string", "enum": names })
        }
        Kind::Message(m) => {
            collect(m, schemas);
            reference(m)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Value {
        let pool = super::super::pool().expect("pool");
        let services: Vec<_> = pool.services().collect();
        document(&services)
    }

    /// Every `$ref` in `value`.
    fn refs(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("$ref", Value::String(r)) => out.push(r.clone()),
                        _ => refs(value, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    #[test]
    fn every_unary_method_has_a_path_and_every_reference_resolves() {
        let spec = spec();
        let pool = super::super::pool().expect("pool");
        let mut unary = 0;
        for service in pool.services() {
            for method in service.methods() {
                let path = path_of(&method);
                let listed = spec["paths"].get(&path).is_some();
                assert_eq!(listed, is_unary(&method), "{path}");
                unary += usize::from(listed);
            }
        }
        assert_eq!(spec["paths"].as_object().map(|p| p.len()), Some(unary));
        let mut all = Vec::new();
        refs(&spec, &mut all);
        assert!(!all.is_empty());
        for r in all {
            let name = r.trim_start_matches("#/components/schemas/");
            let schema = &spec["components"]["schemas"][name];
            assert!(schema.is_object(), "{r} does not resolve");
        }
    }

    #[test]
    fn fields_follow_the_json_mapping() {
        let spec = spec();
        let ask = &spec["components"]["schemas"]["ontoloop.v1.AskRequest"]["properties"];
        assert_eq!(ask["minSequence"]["type"], "string", "{ask}");
        assert_eq!(ask["asOf"]["format"], "date-time", "{ask}");
        assert_eq!(ask["passageRanking"]["type"], "string", "{ask}");
        assert!(
            ask["passageRanking"]["enum"]
                .as_array()
                .is_some_and(|values| values.iter().any(|v| v == "PASSAGE_RANKING_BM25")),
            "{ask}"
        );
        assert!(
            ask.get("min_sequence").is_none(),
            "proto names are not used"
        );
    }
}
