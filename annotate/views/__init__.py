"""Pages: home, sign-in, the researcher's datasets and studies, the annotator's task pages, API docs."""
