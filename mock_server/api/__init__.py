"""The public API's handlers: parse, call the session's store, shape the answer."""
