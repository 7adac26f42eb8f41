"""The OpenAPI documents: loaded once, compiled into request checks, served to clients."""
