"""App configs of our own for Django's apps."""

from django.contrib.staticfiles.apps import StaticFilesConfig


class TallyStaticFilesConfig(StaticFilesConfig):
    """collectstatic leaves out the recipe that builds the vendored Plotly bundle
    (static/vendor/build/: package.json, the lock file, build.sh): it is for us, not for
    the public."""

    ignore_patterns = [*StaticFilesConfig.ignore_patterns, "build"]
