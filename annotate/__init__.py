"""hatlab's web app: corpus, studies, crowd work, quality control, machine results, dashboards."""
