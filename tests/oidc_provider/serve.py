"""`python -m tests.oidc_provider.serve PORT REDIRECT_URI CLIENT_ID CLIENT_SECRET`: migrate
the provider's database, make its accounts and the client, serve until killed."""

import os
import sys
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


def main():
    port, redirect_uri, client_id, client_secret = sys.argv[1:5]
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.oidc_provider.settings"
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application
    from oauth2_provider.models import Application

    call_command("migrate", verbosity=0)
    User = get_user_model()
    User.objects.create_user("ana", "ana@example.org")
    User.objects.create_user("bo", "Bo@Example.org")
    User.objects.create_user("unverified-cy", "cy@example.org")
    Application.objects.create(
        name="Tally",
        client_id=client_id,
        client_secret=client_secret,
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=redirect_uri,
        algorithm=Application.RS256_ALGORITHM,
        skip_authorization=True,
    )
    server = make_server("127.0.0.1", int(port), get_wsgi_application(), server_class=Server, handler_class=Quiet)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
