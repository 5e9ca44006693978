"""mx.nd.random (operators filled in from the registry at import)."""
