"""Scenario files -> seeds: safe reading, schema and cross-checks, problems located as FILE:LINE:COLUMN."""
