"""What every layer leans on and no domain owns: artifact storage, prepared SQL, throttles, the outage answer and the query-string guard."""
