"""Settings, all from environment variables (see README.md, "Configuration")."""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from explorer.env import env_bool, env_list, env_positive_int, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)
# A public key, for a laptop only (`make run` sets DEBUG=1): with DEBUG off the server
# refuses to start with it, or with no key at all, since it signs sessions.
DEVELOPMENT_SECRET_KEY = "dev-insecure-trace-explorer-key-set-SECRET_KEY-in-production"
SECRET_KEY = env_str("SECRET_KEY", "") or (DEVELOPMENT_SECRET_KEY if DEBUG else "")
if not DEBUG and SECRET_KEY in ("", DEVELOPMENT_SECRET_KEY):
    raise ImproperlyConfigured(
        "SECRET_KEY must be set to a long random value when DEBUG is off (e.g. "
        'python -c "import secrets; print(secrets.token_urlsafe(50))"), '
        "or set DEBUG=1 on a development machine"
    )
# Django's own rule for a weak key (check security.W009), enforced at start, not warned.
if not DEBUG and (
    len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5 or SECRET_KEY.startswith("django-insecure-")
):
    raise ImproperlyConfigured(
        "SECRET_KEY is too weak: it needs at least 50 characters, 5 of them different, "
        "and no 'django-insecure-' prefix (e.g. "
        'python -c "import secrets; print(secrets.token_urlsafe(50))")'
    )
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])

# Invariant Explorer's test mode (traces/invariant/auth.py): every /api/v1 request acts as
# one fixed development user, whatever key it sends. Off by default; a server that answers
# any host but this machine's own refuses to start with it unless DEBUG is on.
DEV_MODE = env_bool("DEV_MODE", False)
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]", "testserver"}
if DEV_MODE and not DEBUG and not set(ALLOWED_HOSTS) <= LOOPBACK_HOSTS:
    raise ImproperlyConfigured(
        "DEV_MODE=true lets anyone act as the development user: it needs DEBUG=1, or "
        f"ALLOWED_HOSTS of this machine only ({', '.join(sorted(LOOPBACK_HOSTS))}), "
        f"not {', '.join(ALLOWED_HOSTS)}"
    )

INSTALLED_APPS = [
    "explorer.apps.SuperuserAdminConfig",  # django.contrib.admin, for superusers only
    # Before WhiteNoise's app: its runserver (explorer/nodelay.py) is the one manage.py runs.
    "explorer",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "traces",
    "demo",
    "benchmarks",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Before anything reads a cookie or looks the path up.
    "explorer.nul_guard.NulGuardMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # Before any view's CSRF check reads an upload: its limits answered as 413 pages.
    # request.htmx, before the upload limits answer a refused upload with its fragment.
    "django_htmx.middleware.HtmxMiddleware",
    "explorer.upload_limits.UploadLimitsMiddleware",
    "explorer.busy.DatabaseBusyMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "explorer.security.SecurityHeadersMiddleware",
    # Last, as django-axes asks: turns a refused sign-in into explorer.login_throttle's page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "explorer.urls"
WSGI_APPLICATION = "explorer.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "builtins": [
                "template_partials.templatetags.partials",
                "explorer.templatetags.ago",
                "explorer.templatetags.names",
                "explorer.templatetags.numbers",
            ],
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "explorer.access.template_context",
            ],
        },
    },
]

_DEFAULT_DB = f"sqlite:///{BASE_DIR / 'db.sqlite3'}"
_database_url = env_str("DATABASE_URL", _DEFAULT_DB)
try:
    _database = dj_database_url.parse(_database_url, conn_max_age=60, conn_health_checks=True)
except Exception as exc:  # dj-database-url raises several kinds
    raise ImproperlyConfigured(f"DATABASE_URL={_database_url!r} is not usable: {exc}") from exc
if _database["ENGINE"] not in (
    "django.db.backends.sqlite3",
    "django.db.backends.postgresql",
):
    raise ImproperlyConfigured(
        f"DATABASE_URL={_database_url!r}: only sqlite:// and postgres:// are supported"
    )
if _database["ENGINE"] == "django.db.backends.sqlite3":
    _database["OPTIONS"] = {
        # WAL lets readers run while an import writes; IMMEDIATE avoids
        # lock upgrades that fail with "database is locked".
        "init_command": (
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"
        ),
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }
    # A file, not memory, so that live-server and browser tests share it with the test
    # process; SQLITE_TEST_NAME keeps two suites in one checkout apart.
    _database.setdefault("TEST", {})["NAME"] = env_str(
        "SQLITE_TEST_NAME", str(BASE_DIR / "test-db.sqlite3")
    )
DATABASES = {"default": _database}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    "explorer.login_throttle.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Login throttling (explorer/login_throttle.py): failures per username and per address are
# counted in the database, shared by every worker; a lockout ends after the cool-off.
AXES_FAILURE_LIMIT = env_positive_int("LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_positive_int("LOGIN_LOCKOUT_MINUTES", 15))
# Lock a username out from one address only (explorer/login_throttle.py); an address alone
# at its own, higher limit.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_HANDLER = "explorer.login_throttle.PairThenAddressHandler"
LOGIN_ADDRESS_FAILURE_LIMIT = env_positive_int(
    "LOGIN_ADDRESS_FAILURE_LIMIT", 10 * AXES_FAILURE_LIMIT
)
AXES_LOCKOUT_CALLABLE = "explorer.login_throttle.locked_out"
AXES_CLIENT_IP_CALLABLE = "explorer.login_throttle.client_address"
# How many reverse proxies in front of the app append to X-Forwarded-For (unset: none).
LOGIN_PROXY_COUNT = env_positive_int("LOGIN_PROXY_COUNT", 0)
AXES_VERBOSE = False

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
# The site speaks English only and ships no translations: off, each {% url %}, each
# reverse and each template variable asked the translation machinery for the language,
# about a tenth of a trace page's time (benchmark ui).
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

SESSION_ENGINE = "explorer.sessions"  # Django's database sessions, read faster
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"

# HTTPS=1: served over HTTPS, by a TLS-terminating proxy that sets X-Forwarded-Proto
# (and strips it from what clients send). Cookies are then sent over HTTPS only,
# browsers are told to use HTTPS for a year (HSTS), and plain HTTP is redirected, except
# the health check, which load balancers call over plain HTTP.
if "SESSION_COOKIE_SECURE" in os.environ:
    raise ImproperlyConfigured("SESSION_COOKIE_SECURE is replaced by HTTPS=1 (see README.md)")
HTTPS = env_bool("HTTPS", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = HTTPS
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if HTTPS else None
SECURE_SSL_REDIRECT = HTTPS
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = 365 * 24 * 3600 if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
# Preloading commits the whole domain to HTTPS in browsers' own lists: the domain's
# owner decides that, not this application.
SECURE_HSTS_PRELOAD = False
SILENCED_SYSTEM_CHECKS = ["security.W021"]


# Uploads (the upload page, the admin's, the API's): at most UPLOAD_MAX_FILES files and
# UPLOAD_MAX_BYTES bytes in one request; more is answered 413 on each of them. Every file
# of a request is streamed into one anonymous temporary file (explorer/upload_files.py):
# one file descriptor and no memory per file, so any count up to the limit works.
# (UPLOAD_MAX_FILES sets Django's own DATA_UPLOAD_MAX_NUMBER_FILES, which its parser checks.)
DATA_UPLOAD_MAX_NUMBER_FILES = env_positive_int("UPLOAD_MAX_FILES", 10000)
UPLOAD_MAX_BYTES = env_positive_int("UPLOAD_MAX_BYTES", 1 << 30)
FILE_UPLOAD_HANDLERS = ["explorer.upload_files.SharedTempFileUploadHandler"]
# Where uploads and an import's spools (traces/spool.py) are written: a disk with room
# for the largest upload (the system's temporary folder, TMPDIR, when unset).
FILE_UPLOAD_TEMP_DIR = env_str("FILE_UPLOAD_TEMP_DIR", "") or None
# Processes that read a large JSON Lines upload at once, each a part of it (1: the
# importing process alone). By default one a core, at most 4.
IMPORT_WORKERS = env_positive_int("IMPORT_WORKERS", min(os.cpu_count() or 1, 4))
DATA_UPLOAD_MAX_MEMORY_SIZE = env_positive_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 32 * 1024 * 1024)
# Invariant Explorer's /api/v1: an append converts and places the whole trace again under
# its row lock, so a trace holds at most this many events, and one append adds at most so
# many (more is a 400 that says so).
EXPLORER_MAX_TRACE_EVENTS = env_positive_int("EXPLORER_MAX_TRACE_EVENTS", 10000)
EXPLORER_MAX_APPEND_EVENTS = env_positive_int("EXPLORER_MAX_APPEND_EVENTS", 1000)
# One member of an uploaded zip (an Inspect .eval log's sample) is decompressed into memory
# to be parsed: at most this many bytes, so a small zip cannot expand to gigabytes.
IMPORT_MEMBER_MAX_BYTES = env_positive_int(
    "IMPORT_MEMBER_MAX_BYTES", min(UPLOAD_MAX_BYTES, 256 * 1024 * 1024)
)

# Byte limits of spec/004, per payload field.
LIMIT_MSG_BYTES = env_positive_int("LIMIT_MSG_BYTES", 65536)
LIMIT_THINK_BYTES = env_positive_int("LIMIT_THINK_BYTES", 32768)
LIMIT_TOOL_ARGS_BYTES = env_positive_int("LIMIT_TOOL_ARGS_BYTES", 262144)
LIMIT_TOOL_RESULT_BYTES = env_positive_int("LIMIT_TOOL_RESULT_BYTES", 2097152)
# A message in an imported file (DESIGN.md "imports keep real logs whole").
LIMIT_IMPORT_MESSAGE_BYTES = env_positive_int("LIMIT_IMPORT_MESSAGE_BYTES", LIMIT_TOOL_RESULT_BYTES)
LIMIT_IMAGE_BYTES = env_positive_int("LIMIT_IMAGE_BYTES", 20 * 1024 * 1024)
# The OTLP/HTTP receiver (/otlp/v1/traces): a body, or what a gzip body inflates to, of
# more than this is refused 413 (traces/api/otlp.py).
OTLP_MAX_BYTES = env_positive_int("OTLP_MAX_BYTES", 16 * 1024 * 1024)
# One OTel trace's spans, kept to derive its blocks again when more arrive: at most this
# many, of at most this many bytes; spans past either are refused (partial_success), so
# that a batch's work stays bounded however long a trace runs.
OTEL_TRACE_MAX_SPANS = env_positive_int("OTEL_TRACE_MAX_SPANS", 10000)
OTEL_TRACE_MAX_BYTES = env_positive_int("OTEL_TRACE_MAX_BYTES", 32 * 1024 * 1024)
# One export request's work, in its one transaction: spans past the request's first this
# many traces, datasets or spans are refused (partial_success), so that a small request
# never costs minutes (each new trace or dataset is rows, locks and a derivation).
OTEL_REQUEST_MAX_TRACES = env_positive_int("OTEL_REQUEST_MAX_TRACES", 100)
OTEL_REQUEST_MAX_DATASETS = env_positive_int("OTEL_REQUEST_MAX_DATASETS", 10)
OTEL_REQUEST_MAX_SPANS = env_positive_int("OTEL_REQUEST_MAX_SPANS", 5000)
# What a trace's derivation may cost, since each batch derives the trace again from all
# its spans: a span of more input and output messages than this is refused, and so is a
# span that would take the trace past this many blocks (partial_success).
OTEL_SPAN_MAX_MESSAGES = env_positive_int("OTEL_SPAN_MAX_MESSAGES", 2000)
OTEL_TRACE_MAX_BLOCKS = env_positive_int("OTEL_TRACE_MAX_BLOCKS", 5000)

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "traces.api.errors.exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["traces.api.json.OrjsonRenderer"],
    "DEFAULT_PARSER_CLASSES": ["traces.api.json.OrjsonParser"],
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # ?format= is the export's own parameter, not DRF's renderer switch.
    "URL_FORMAT_OVERRIDE": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Trace Explorer API",
    "DESCRIPTION": (
        # Markdown (Swagger UI renders it): in backticks, `<org>` is not taken for a tag.
        "Blocks of agent traces (spec/004) under `/v1/organizations/<org>/`. "
        "Authenticate with `Authorization: Bearer <key>`. Every error is "
        '`{"error": {"code", "http_status", "message", "details"}}`.'
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The docs page loads Swagger UI from this project's static files, never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SECURITY": [{"bearerAuth": []}],
    "APPEND_COMPONENTS": {"securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}}},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "traces.api.schema.describe_organization",
    ],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}

# The largest blocks:batch body the API takes.
API_BATCH_MAX_BYTES = env_positive_int("API_BATCH_MAX_BYTES", 256 << 20)
