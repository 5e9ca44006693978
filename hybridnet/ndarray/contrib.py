"""mx.nd.contrib (operators filled in from the registry at import)."""
