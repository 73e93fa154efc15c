"""Evidence bundles: the schema, redaction, the manifest and the readable page."""
