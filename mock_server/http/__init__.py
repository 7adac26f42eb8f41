"""The request pipeline under every route: connection bounds, auth, sessions, injected fault replies."""
