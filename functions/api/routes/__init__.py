"""One router per resource; the handler module includes them all."""
