import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "explorer.settings")
application = get_wsgi_application()

# What a server process loads to answer (settings, models, every view through the URLconf)
# lives as long as the process: kept out of the collector's generations, a full collection
# walks only what requests made. Walking it all cost a 1,000-block blocks:batch ~20% of its
# time (a full collection of ~140,000 objects every few batches, ~100 ms each).
get_resolver().url_patterns  # noqa: B018 (imports every view)
gc.collect()
gc.freeze()
