"""Settings, all from the environment (twelve-factor).

``DATABASE_URL`` (default: PostgreSQL ``postgres://postgres@127.0.0.1:5432/hatlab``; the demo sets a
SQLite URL), ``CELERY_BROKER_URL`` (default Redis on localhost), ``CELERY_TASK_ALWAYS_EAGER`` (run jobs
in-process, for the demo), ``DJANGO_SECRET_KEY``, ``DJANGO_DEBUG``, ``DJANGO_ALLOWED_HOSTS``, the crowd
providers' credentials (``AWS_*``, ``MTURK_*``, ``PROLIFIC_*``) and ``HATLAB_*`` options.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


DEBUG = env_bool("DJANGO_DEBUG", False)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    # The key signs sessions and the annotators' worker cookie: a known key lets anyone forge both. Only a
    # development server (DEBUG on, as `make demo` runs it) may fall back to one.
    if not DEBUG:
        raise RuntimeError(
            "DJANGO_SECRET_KEY is not set: set DJANGO_SECRET_KEY to a long random string "
            "(or DJANGO_DEBUG=1 for a development server on a throw-away key)"
        )
    SECRET_KEY = "hatlab-insecure-development-key-set-DJANGO_SECRET_KEY"
ALLOWED_HOSTS = [
    h for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver").split(",") if h
]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "annotate",
]

MIDDLEWARE = [
    # forwarded headers only from our own proxy (DJANGO_TRUSTED_PROXIES), before anything reads them
    "annotate.infra.edge.TrustedProxyHeaders",
    "annotate.infra.edge.ContentSecurityPolicy",
    # outermost but one: a database or broker outage anywhere inside answers 503 + Retry-After
    "django.middleware.security.SecurityMiddleware",
    "annotate.infra.outages.OutageMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "annotate.infra.query_guard.QueryStringGuard",
    # a query parameter the API operation does not take (per its OpenAPI schema) is a 400
    "annotate.api.query_params.UndocumentedQueryGuard",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # bodies over the caps answer 413 before a view (or the CSRF check) reads them
    "annotate.infra.edge.BodySizeLimit",
    # the message storage made on first use (the annotator API never shows a message)
    "annotate.infra.lazy_messages.LazyMessages",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # each task kind's folder keeps its own templates (annotate/kinds/<kind>/templates/<kind>/...)
        "DIRS": sorted((BASE_DIR / "annotate" / "kinds").glob("*/templates")),
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotate.views.context_processors.roles",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/hatlab"),
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")),
        # a kept connection is checked before a request reuses it: one that a database restart
        # closed is replaced instead of failing the request
        conn_health_checks=env_bool("DATABASE_CONN_HEALTH_CHECKS", True),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # the same backend, whose health check polls the socket instead of a round trip (annotate.infra.postgres)
    DATABASES["default"]["ENGINE"] = "annotate.infra.postgres"
# A test run's own database, so two runs on one host don't collide: HATLAB_TEST_RUN names the run (the
# Makefile passes its shell's process id; default: this process's id). SQLite tests use an in-memory database.
if DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":
    DATABASES["default"]["TEST"] = {
        "NAME": f"test_{DATABASES['default']['NAME']}_{os.environ.get('HATLAB_TEST_RUN') or os.getpid()}"
    }
# In-process jobs (CELERY_TASK_ALWAYS_EAGER) run on a background thread instead of inside the request that
# asked for them (annotate.jobs.in_process): the demo's pages answer at once and show progress. On SQLite
# the thread's writes and the requests' are serialised: WAL lets pages read meanwhile, and a writer
# waits up to 30 s for the other instead of failing with "database is locked".
HATLAB_JOBS_IN_THREAD = env_bool("HATLAB_JOBS_IN_THREAD", False)
if HATLAB_JOBS_IN_THREAD and DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = {
        **DATABASES["default"].get("OPTIONS", {}),
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# The local demo (``make demo``) signs in with a tenth of PBKDF2's default rounds: the default costs about a
# second of CPU per sign-in. Only with DEBUG on: a production server keeps Django's default.
if DEBUG and env_bool("HATLAB_DEMO_FAST_HASH", False):
    PASSWORD_HASHERS = ["annotate.infra.hashers.DemoPBKDF2PasswordHasher"]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(os.environ.get("HATLAB_STATIC_ROOT", BASE_DIR / "staticfiles"))
STATICFILES_DIRS = [BASE_DIR / "frontend" / "dist"]
# Served by WhiteNoise under gunicorn; no CDN: crowd workers' browsers load every asset from us.
WHITENOISE_USE_FINDERS = True
# Before `collectstatic` has run (development, tests) the finders serve everything; no need to warn.
warnings.filterwarnings("ignore", message="No directory at")
MEDIA_URL = "/media/"
MEDIA_ROOT = Path(os.environ.get("HATLAB_MEDIA_ROOT", BASE_DIR / "media"))
# Model artifacts and exports go to S3 when a bucket is configured (boto3), else under MEDIA_ROOT.
HATLAB_S3_BUCKET = os.environ.get("HATLAB_S3_BUCKET", "")

# Mail: the set-password links of researchers an admin invites or resets (annotate.accounts.links); with no
# SMTP server reachable the page still shows the link and says it was not mailed.
EMAIL_HOST = os.environ.get("DJANGO_EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("DJANGO_EMAIL_PORT", "25"))
DEFAULT_FROM_EMAIL = os.environ.get("DJANGO_DEFAULT_FROM_EMAIL", "hatlab@localhost")
# How long a set-password link works, in seconds (Django's default: three days).
PASSWORD_RESET_TIMEOUT = int(os.environ.get("DJANGO_PASSWORD_RESET_TIMEOUT", str(3 * 24 * 3600)))

SESSION_COOKIE_HTTPONLY = True
# DJANGO_HTTPS: the site is served over HTTPS only (docker-compose turns it on): secure cookies, a redirect to
# HTTPS and HSTS. DJANGO_SECURE_COOKIES alone keeps the cookies secure without the redirect and HSTS.
HTTPS = env_bool("DJANGO_HTTPS", False)
SESSION_COOKIE_SECURE = HTTPS or env_bool("DJANGO_SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# The session and CSRF cookies stay on our own site. Only the annotators' worker cookie (annotate.handout.workers) is
# SameSite=None over HTTPS, so that it reaches us inside a crowd platform's frame, a cross-site context; the
# annotator API's CSRF token is bound to that cookie's worker, not to the CSRF cookie.
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_SSL_REDIRECT = HTTPS
SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", "31536000")) if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD", True)
# Behind a proxy that ends TLS (docker-compose): trust its X-Forwarded-Proto to tell HTTPS requests, and the
# address it appends to X-Forwarded-For as the client's (the throttles count per client address).
BEHIND_TLS_PROXY = env_bool("DJANGO_BEHIND_TLS_PROXY", False)
if BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# The proxies whose forwarded headers are believed (addresses or networks; annotate.infra.edge drops them from
# anyone else). docker-compose names its nginx.
TRUSTED_PROXIES = os.environ.get("DJANGO_TRUSTED_PROXIES", "127.0.0.1,::1").replace(",", " ").split()
SECURE_CONTENT_TYPE_NOSNIFF = True
# No page may be framed, except the annotator pages (only they), by these origins (annotate.views.framing).
X_FRAME_OPTIONS = "DENY"
HATLAB_FRAME_ANCESTORS = os.environ.get(
    "HATLAB_FRAME_ANCESTORS", "https://www.mturk.com https://workersandbox.mturk.com"
).split()
# Where a finished MTurk page may post its externalSubmit form (the MTurk adapter, and the CSP's form-action):
# MTurk's worker sites (tests name a local stand-in).
HATLAB_MTURK_SUBMIT_HOSTS = os.environ.get(
    "HATLAB_MTURK_SUBMIT_HOSTS", "https://workersandbox.mturk.com https://www.mturk.com"
).split()

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "annotate.api.authentication.SessionCSRFAuthentication",
        "annotate.api.authentication.ThrottledBasicAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "annotate.api.pagination.StrictPageNumberPagination",
    "PAGE_SIZE": 100,
    # JSON only (the dataset upload adds multipart itself), read with the limits below
    "DEFAULT_PARSER_CLASSES": ["annotate.api.parsers.LimitedJSONParser"],
}
# JSON bodies (annotate/infra/json_input.py): bytes and nesting depth past which a body is a 400; the
# annotator's submissions have their own, smaller size limit.
HATLAB_JSON_MAX_BYTES = int(os.environ.get("HATLAB_JSON_MAX_BYTES", str(2 * 1024 * 1024)))
HATLAB_JSON_MAX_DEPTH = int(os.environ.get("HATLAB_JSON_MAX_DEPTH", "32"))
HATLAB_SUBMISSION_MAX_BYTES = int(os.environ.get("HATLAB_SUBMISSION_MAX_BYTES", str(256 * 1024)))
SPECTACULAR_SETTINGS = {
    "TITLE": "hatlab API",
    "DESCRIPTION": "Studies of human attention and human-grounded evaluation of NLP explanations. "
    "JSON bodies are refused (400) past HATLAB_JSON_MAX_BYTES bytes or HATLAB_JSON_MAX_DEPTH levels of "
    "nesting, and so is NaN, Infinity, a NUL character (\\u0000) or a lone surrogate in any string of a "
    "body or query.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # request bodies get their own components: what a client sends (required, minLength, write-only
    # fields) is described apart from what it reads back
    "COMPONENT_SPLIT_REQUEST": True,
    # every operation's error answers (400/403/404/415/429/503) in the schema
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "annotate.api.errors.document_errors",
        "annotate.api.errors.refuse_nul",
    ],
    # jobs and model runs share their states' names
    "ENUM_NAME_OVERRIDES": {"JobStatusEnum": "annotate.models.jobs.Job.Status"},
}

# Celery: Redis broker; jobs acknowledge late and are re-delivered when a worker dies.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", "") or None
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "cpu"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
HATLAB_TORCH_THREADS = int(os.environ.get("HATLAB_TORCH_THREADS", "1"))
# Route engine jobs to the ``gpu`` queue (consumed by workers started with ``-Q gpu``).
HATLAB_GPU_QUEUE = env_bool("HATLAB_GPU_QUEUE", False)
# How long an unacknowledged job waits before Redis hands it to another worker.
# A broker that does not answer is given up on quickly: the job stays in its row (the outbox). The read
# timeout matters as much as the connect timeout: a stopped Redis still accepts connections (the kernel
# does), and without it a send waits on the reply for ever. It stays above kombu's BRPOP timeout (1 s),
# so an idle worker's long poll is not cut; the health check drops a half-open consumer connection.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": int(os.environ.get("HATLAB_VISIBILITY_TIMEOUT", "3600")),
    "socket_connect_timeout": float(os.environ.get("HATLAB_BROKER_CONNECT_TIMEOUT", "2")),
    "socket_timeout": float(os.environ.get("HATLAB_BROKER_SOCKET_TIMEOUT", "2")),
    "socket_keepalive": True,
    "health_check_interval": 10,
}
CELERY_BROKER_CONNECTION_TIMEOUT = float(os.environ.get("HATLAB_BROKER_CONNECT_TIMEOUT", "2"))
# Jobs that cannot be lost (annotate.jobs.dispatch, annotate.jobs.sweeper): a job row is sent after it
# is committed; one whose send failed is sent again after HATLAB_JOB_SEND_GRACE_S, one sent but still
# queued after HATLAB_JOB_RESEND_S (the broker may have lost it); a running job's worker writes a
# heartbeat every HATLAB_JOB_HEARTBEAT_S, and a job without one for HATLAB_JOB_LOST_AFTER_S is marked
# lost and sent again. The sweep runs on the beat schedule every HATLAB_JOB_SWEEP_S, and in the web
# process (at most as often) on requests that touch jobs, which works while the broker is down.
# At most this many jobs of one researcher are in the broker or running at a time; the rest wait on their
# rows and the sweep sends them as earlier ones finish (annotate/jobs/dispatch.py).
HATLAB_JOBS_PER_OWNER = int(os.environ.get("HATLAB_JOBS_PER_OWNER", "2"))
HATLAB_JOB_SEND_GRACE_S = float(os.environ.get("HATLAB_JOB_SEND_GRACE_S", "5"))
HATLAB_JOB_RESEND_S = float(os.environ.get("HATLAB_JOB_RESEND_S", "900"))
HATLAB_JOB_HEARTBEAT_S = float(os.environ.get("HATLAB_JOB_HEARTBEAT_S", "10"))
HATLAB_JOB_LOST_AFTER_S = float(os.environ.get("HATLAB_JOB_LOST_AFTER_S", "35"))
HATLAB_JOB_SWEEP_S = float(os.environ.get("HATLAB_JOB_SWEEP_S", "15"))
# What an outage answer asks the client to wait before trying again (annotate.infra.outages).
HATLAB_RETRY_AFTER_S = int(os.environ.get("HATLAB_RETRY_AFTER_S", "2"))

# Crowd providers: credentials only from the environment.
MTURK_SANDBOX = env_bool("MTURK_SANDBOX", True)
MTURK_REGION = os.environ.get("MTURK_REGION", "us-east-1")
PROLIFIC_API_TOKEN = os.environ.get("PROLIFIC_API_TOKEN", "")
PROLIFIC_API_URL = os.environ.get("PROLIFIC_API_URL", "https://api.prolific.com/api/v1/")
# A folder with the Hu & Liu opinion lexicon (positive-words.txt, negative-words.txt) for the CSSR charts,
# used when none was uploaded on the lexicon settings page (/settings/lexicon/, stored under MEDIA_ROOT).
HATLAB_LEXICON_DIR = os.environ.get("HATLAB_LEXICON_DIR", "")
# Pre-trained transformer checkpoints researchers may fine-tune: the folder an admin fills (each model a
# sub-folder with its config.json), and whether a hub name may be downloaded (off where HF_HUB_OFFLINE is set).
HATLAB_MODEL_DIR = os.environ.get("HATLAB_MODEL_DIR", "")
HATLAB_HUB_DOWNLOADS = env_bool("HATLAB_HUB_DOWNLOADS", not env_bool("HF_HUB_OFFLINE", False))
HATLAB_DASHBOARD_INLINE_RESPONSES = int(os.environ.get("HATLAB_DASHBOARD_INLINE_RESPONSES", "3000"))
HATLAB_PUBLIC_URL = os.environ.get("HATLAB_PUBLIC_URL", "http://127.0.0.1:8000")
# Seconds a crowd platform's confirmation of a provisional answer may come late, on top of the time a
# worker may spend on one unit of work; past both, the unconfirmed answer is set aside and its slot reused.
HATLAB_PROVISIONAL_GRACE_S = int(os.environ.get("HATLAB_PROVISIONAL_GRACE_S", "3600"))

# The cache holds the throttles' counters (annotate.infra.throttle): HATLAB_CACHE_URL names a Redis database shared by
# every web process (docker-compose sets one); without it each process counts on its own, in memory. Short
# timeouts, for reads too (a stopped Redis accepts connections and never answers): the throttles let
# requests through when Redis is down or hangs, and after one failure skip it for HATLAB_CACHE_BREAKER_S
# (annotate.infra.shared_cache), so a hung Redis costs one request half a second, not every request.
REDIS_CACHE_OPTIONS = {
    "socket_connect_timeout": float(os.environ.get("HATLAB_CACHE_TIMEOUT", "0.5")),
    "socket_timeout": float(os.environ.get("HATLAB_CACHE_TIMEOUT", "0.5")),
}
HATLAB_CACHE_BREAKER_S = float(os.environ.get("HATLAB_CACHE_BREAKER_S", "10"))
CACHES = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": os.environ["HATLAB_CACHE_URL"],
            "OPTIONS": REDIS_CACHE_OPTIONS,
        }
        if os.environ.get("HATLAB_CACHE_URL")
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}


def env_rate(name: str, default: str) -> tuple[int, int]:
    """A throttle's rate from ``name``: ``"<requests>/<seconds>"``, e.g. ``"20/300"``."""
    value = os.environ.get(name, default)
    count, _, seconds = value.partition("/")
    try:
        rate = int(count), int(seconds)
    except ValueError:
        raise RuntimeError(f"{name}={value!r}: write it as <requests>/<seconds>, e.g. {default}") from None
    if rate[0] < 1 or rate[1] < 1:
        raise RuntimeError(f"{name}={value!r}: both numbers must be positive")
    return rate


# Throttles (annotate.infra.throttle), each ``(requests, seconds)`` in a fixed window; HATLAB_THROTTLES=0 turns all off.
HATLAB_THROTTLES = env_bool("HATLAB_THROTTLES", True)
# sign-in attempts (the login page and the API's Basic authentication) per client address and per account name
HATLAB_THROTTLE_LOGIN_IP = env_rate("HATLAB_THROTTLE_LOGIN_IP", "30/300")
HATLAB_THROTTLE_LOGIN_ACCOUNT = env_rate("HATLAB_THROTTLE_LOGIN_ACCOUNT", "10/300")
# visits to a study's entry page by a browser with no worker in that study yet, per client address and study
HATLAB_THROTTLE_NEW_WORKER = env_rate("HATLAB_THROTTLE_NEW_WORKER", "30/600")
# annotator API requests (next, submit) per worker: an answer costs one or two requests and takes seconds
HATLAB_THROTTLE_WORK_API = env_rate("HATLAB_THROTTLE_WORK_API", "300/60")

# Caps on what an import may bring (annotate.corpus.imports and the kinds' imports): a file's bytes, its rows, a text's
# characters and words. The error names the cap that was passed.
HATLAB_IMPORT_MAX_BYTES = int(os.environ.get("HATLAB_IMPORT_MAX_BYTES", str(50 * 1024 * 1024)))
HATLAB_IMPORT_MAX_ROWS = int(os.environ.get("HATLAB_IMPORT_MAX_ROWS", "100000"))
HATLAB_IMPORT_MAX_CHARS = int(os.environ.get("HATLAB_IMPORT_MAX_CHARS", "20000"))
HATLAB_IMPORT_MAX_WORDS = int(os.environ.get("HATLAB_IMPORT_MAX_WORDS", "2000"))

# Request bodies (annotate.infra.edge.BodySizeLimit, by Content-Length, 413 past a cap): any request may bring an
# import and its form; a request of nobody signed in (annotators, the sign-in forms) at most a JSON body's cap.
HATLAB_MAX_BODY_BYTES = int(
    os.environ.get("HATLAB_MAX_BODY_BYTES", str(HATLAB_IMPORT_MAX_BYTES + 1024 * 1024))
)
HATLAB_MAX_ANONYMOUS_BODY_BYTES = int(
    os.environ.get(
        "HATLAB_MAX_ANONYMOUS_BODY_BYTES", str(max(HATLAB_JSON_MAX_BYTES, HATLAB_SUBMISSION_MAX_BYTES))
    )
)
# What Django itself reads of a form: fields in memory, the number of fields and of files.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE", str(2_621_440)))
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE
DATA_UPLOAD_MAX_NUMBER_FIELDS = 1000
DATA_UPLOAD_MAX_NUMBER_FILES = 20

# The Content-Security-Policy of every page (annotate.infra.edge): nothing inline, nothing from elsewhere.
# form-action (this site and MTurk's externalSubmit hosts) and frame-ancestors are added per response.
HATLAB_CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
    ]
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("HATLAB_LOG_LEVEL", "WARNING")},
}
