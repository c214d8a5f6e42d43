"""`manage.py runserver` (what `make run` serves with) on explorer/nodelay.py's server:
WhiteNoise's runserver, which it extends, answered each request on a kept-alive
connection 45 ms late."""

from whitenoise.runserver_nostatic.management.commands.runserver import (
    Command as WhiteNoiseRunserver,
)

from explorer.nodelay import NoDelayWSGIServer


class Command(WhiteNoiseRunserver):
    server_cls = NoDelayWSGIServer
