//! Unit tests for the tools' schemas and texts.

use super::*;

/// rmcp's typed `ElicitationSchema` must carry each form to the wire unchanged: the
/// conformance checks read `default`, `enumNames`, `oneOf` and `anyOf` back.
#[test]
fn elicitation_schemas_survive_rmcp() {
    for schema in [user_schema(), sep1034_schema(), sep1330_schema()] {
        let object = serde_json::from_value(schema.clone()).expect("an object");
        let typed = mcp::ElicitationSchema::from_json_schema(object).expect("a valid form");
        let wire = serde_json::to_value(&typed).expect("serializable");
        for (name, property) in schema["properties"].as_object().expect("properties") {
            assert_eq!(&wire["properties"][name], property, "property {name}");
        }
        assert_eq!(wire["required"], schema["required"]);
    }
}

#[test]
fn json_schema_2020_12_keywords_are_kept() {
    let tool = Fixture::json_schema_2020_12_tool_tool_attr();
    let schema = &tool.input_schema;
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert!(schema["$defs"]["address"].is_object());
    assert_eq!(schema["additionalProperties"], false);
}

#[test]
fn elicit_results_are_described() {
    let accepted = mcp::ElicitResult::new(mcp::ElicitationAction::Accept)
        .with_content(serde_json::json!({ "a": 1 }));
    assert_eq!(describe(&accepted), r#"action=accept, content={"a":1}"#);
    let declined = mcp::ElicitResult::new(mcp::ElicitationAction::Decline);
    assert_eq!(describe(&declined), "action=decline, content=null");
}
