"""PLACEHOLDER until the hosted class's own file lands from main (it replaces this one):
nbgrader's exchange in a hosted class, the ngshare service, for the course
``$MHA_COURSE_ID``. deploy/Dockerfile copies this file to /etc/jupyter/nbgrader_config.py.

``$MHA_EXCHANGE_URL`` is the service's address (deploy/values.yaml sets it on
Kubernetes); without it ngshare-exchange finds http://proxy-public/services/ngshare
there by itself.
"""

import os

from ngshare_exchange import configureExchange

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)
configureExchange(c, os.environ.get("MHA_EXCHANGE_URL") or None)
c.CourseDirectory.course_id = os.environ.get("MHA_COURSE_ID", "mha-workbook")
