"""Write ``memtui/services/health/common_words.txt``: the words of ordinary English prose, so that the health
rules can tell a name typed in lower case ("switched to gotenberg") from a word of the language.

    .venv/bin/python scripts/gen_common_words.py

The words are those of the comments and docstrings of the Python standard library and of the packages installed
in the venv (PSF, MIT, BSD and Apache licensed prose) that occur in lower case in at least ``MIN_FILES`` files and are not written capitalised inside a sentence in more
files than that (a product name is: "built with Pandoc"), plus the words of
a developer's and a product team's daily talk that such prose lacks (``EVERYDAY``, written by hand). A product name
occurs in few files; a word of the language in many.
"""

from __future__ import annotations

import collections
import re
import sys
import sysconfig
from pathlib import Path

MIN_FILES = 3
OUT = Path(__file__).resolve().parents[1] / "memtui" / "services" / "health" / "common_words.txt"
EVERYDAY = """
cluster shard tile caption favicon retina blurry spike redesign reindex billing invoice receipt payment refund cart
outage incident postmortem retro standup sprint roadmap ticket hotfix rollout canary deploy staging prod laptop
mobile tablet photo thumbnail avatar newsletter sms onboarding signup logout admin partner marketing sales finance
geocoding locale tone backup replica pod cron topic broker pipeline warehouse lake analytics metric mailer throttle
weekend nightly hourly daily weekly monthly yearly quarterly morning evening tonight yesterday tomorrow wound sunset
ditch logo sidebar toast dashboard checkout pricing subscription vendor contract license budget expensive cheap
flaky slow fast broken upgrade downgrade migration migrate rewrite refactor linting linter formatter bundle bundler
frontend backend fullstack devops infra infrastructure monorepo microservice webhook endpoint gateway proxy firewall
certificate cert ssl tls dns domain subdomain hostname latency throughput uptime downtime failover autoscaling scaling
autoscale rollback changelog readme wiki handbook runbook playbook on-call oncall pager escalation triage ops
designer engineer intern contractor reviewer approver stakeholder manager lead product feature flag toggle rollout
experiment cohort funnel conversion churn retention revenue quota tier seat trial plan discount coupon promo
shipping warehouse inventory order orders catalog sku listing storefront merchant courier tracking parcel
map route geofence coordinate address postcode zipcode country region city timezone calendar holiday vacation
photo gallery upload download video audio transcode stream podcast episode playlist caption subtitle thumbnail
chat message inbox thread comment reaction emoji mention notification digest reminder alarm alert pager
login password passkey otp token session cookie signin sign-in signup sign-up oauth sso saml mfa 2fa
spreadsheet sheet slide deck doc docs pdf report export import csv invoice statement ledger payout payroll
tests test suite fixture mock stub snapshot coverage benchmark profiler debugger breakpoint stacktrace traceback
dependency dependencies lockfile manifest package packages plugin plugins extension extensions addon addons
container image registry volume mount secret secrets vault env config configs setting settings variable
nightlies weekends builds build compile compiler transpile transpiler minify minifier bundling tree-shaking
chart graph legend axis label tooltip badge banner dropdown meeting office desk coffee lunch holiday travel hotel car
bike road street town house door roof garden flower grass air earth moon sky rain snow money bank cash loan tax profit
sale market shop brand school student teacher lesson chapter story poem song film doctor nurse patient hospital foot
heart brain blood skin hair eye ear mouth nose friend mother father baby son daughter brother sister husband wife
woman boy girl food bread meat milk cheese fruit orange banana rice soup salad salt pepper tea wine beer bird horse cow
pig sheep rat bear lion tiger wolf fox sad angry tired shiny loud hire paid buy bought sold rent legacy stale noisy
repo repos fork forks branch branches commit commits merge merges rebase tag tags release releases version versions
renew renewed renewal january february march april june july august september october november december
"""


def prose_words() -> tuple[collections.Counter[str], collections.Counter[str]]:
    roots = [Path(sysconfig.get_paths()["stdlib"]), Path(sysconfig.get_paths()["purelib"])]
    files: collections.Counter[str] = collections.Counter()
    capitalised: collections.Counter[str] = collections.Counter()
    for base in roots:
        for path in base.rglob("*.py"):
            parts = set(path.relative_to(base).parts)
            if {"test", "tests"} & parts or (base == roots[0] and "site-packages" in parts):
                continue
            text = path.read_text(encoding="utf-8", errors="ignore")
            prose = " ".join(re.findall(r"#([^\n]*)", text)) + " " + " ".join(re.findall(r'"""(.*?)"""', text, re.S))
            files.update(set(re.findall(r"(?<![\w.])[a-z]+(?![\w.])", prose)))
            # a name is written capitalised inside a sentence ("built with Pandoc"); a word of the language is not
            capitalised.update({w.lower() for w in re.findall(r"(?<=[a-z,] )[A-Z][a-z]+(?![\w.])", prose)})
    return files, capitalised


def main() -> int:
    counts, capitalised = prose_words()
    words = {w for w, n in counts.items() if n >= MIN_FILES and capitalised[w] <= n} | set(EVERYDAY.split())
    OUT.write_text("\n".join(sorted(words)) + "\n")
    print(f"{len(words)} words -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
