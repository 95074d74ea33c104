//! Tests of the openai_responses dialect.
