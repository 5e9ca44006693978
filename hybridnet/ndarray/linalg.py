"""mx.nd.linalg (operators filled in from the registry at import)."""
