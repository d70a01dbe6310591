"""The API's clients, generated from the OpenAPI document the server builds (clients/generate.py)."""
