"""The wire models both surfaces speak (the HTTP API and the agent tools): camelCase, no storage key or bucket as a
field. Shared here so that neither handler package imports the other."""
