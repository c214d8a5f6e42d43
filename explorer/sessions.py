"""Django's database sessions (SESSION_ENGINE), each read by a prepared query: every
request of a signed-in person reads its session, and the ORM compiling that query anew
cost more than the database answering it (traces/selectors/prepared.py). The table, the
cookie and what is stored are Django's: sessions opened before this engine stay open."""

from django.contrib.sessions.backends import db
from django.contrib.sessions.models import Session
from django.utils import timezone

from traces.selectors.prepared import Prepared

_SESSION: Prepared[Session] = Prepared(
    lambda session_key: Session.objects.filter(session_key=session_key), str
)


class SessionStore(db.SessionStore):
    def _get_session_from_db(self) -> Session | None:
        key = self.session_key  # a key as Django takes it (at least 8 characters)
        found = _SESSION(key) if key and "\x00" not in key else []
        # Expired: as if it were not there (Django's query asks the same of the database).
        if found and found[0].expire_date > timezone.now():
            return found[0]
        self._session_key = None
        return None
