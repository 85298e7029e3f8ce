"""The REST routes, one module per resource."""
