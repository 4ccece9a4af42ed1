from django.apps import AppConfig


class AnalyticsConfig(AppConfig):
    name = "analytics"
    verbose_name = "Tally analytics"

    def ready(self):
        from . import sites

        sites.connect_signals()
