"""The JSON API: researchers' datasets and studies, and the annotators' next / submit endpoints."""
