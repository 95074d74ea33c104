//! Tests of the anthropic dialect.
