from django.apps import AppConfig


class RecommendationsConfig(AppConfig):
    name = "recommendations"
    verbose_name = "Tally recommendations"

    def ready(self):
        from analytics import hooks

        from .hooks import HOOKS

        hooks.register(HOOKS)
