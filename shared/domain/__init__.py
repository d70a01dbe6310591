"""Pure domain: pydantic models, closed enums and pure functions. Imports stdlib and pydantic only."""
