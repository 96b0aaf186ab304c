import json
import sys

import requests

payload = json.load(sys.stdin)
print(requests.get(payload["url"], timeout=10).status_code)
