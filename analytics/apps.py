from django.apps import AppConfig


class AnalyticsConfig(AppConfig):
    name = "analytics"
    verbose_name = "Tally analytics"

    def ready(self):
        from config import checks  # noqa: F401  (registers the system checks)

        from . import pins, site_deletion, sites

        sites.connect_signals()
        pins.connect_signals()
        site_deletion.connect_signals()
