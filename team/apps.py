from django.apps import AppConfig


class TeamConfig(AppConfig):
    name = "team"
    verbose_name = "Tally team: members, roles, invitations, audit log"
