"""What the client tells about itself: statistics (``metrics``, behind ``Client.stats()``),
OpenTelemetry metrics and spans (``otel``) and log records with the session's identity
(``logs``)."""
