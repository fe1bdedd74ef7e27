from django.apps import AppConfig
from django.utils.module_loading import import_string


class AnnotateConfig(AppConfig):
    name = "annotate"
    verbose_name = "hatlab"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Register the task kinds (:func:`annotate.tasks.load_kinds`) and every concern's jobs
        (:func:`annotate.jobs.job_modules`). Both import the models, which Django lets a module import only
        once the app registry is ready, so they are named, not imported, here."""
        import_string("annotate.tasks.load_kinds")()
        import_string("annotate.jobs.job_modules")()
