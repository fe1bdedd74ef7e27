"""Everything the app writes out: a study's export tables and streams, its datasheet, and the one formula-safe CSV writer."""
