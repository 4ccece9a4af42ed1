"""Country names as other products export them -> ISO 3166-1 alpha-2 codes (what Tally
stores). GA4 names countries in English (CLDR's short names: "United States", "Bosnia &
Herzegovina", "Congo - Kinshasa", "Myanmar (Burma)"); names are matched after folding case,
accents, "&" and "St.", so one table covers the common spellings. The names are those of
analytics/countries.py (the dashboard's too), then GA4's own.
"""

import re
import unicodedata
from functools import lru_cache

from ..countries import COUNTRIES

NAMES = {
    **{name: code for code, (_, name) in COUNTRIES.items()},
    # GA4's (CLDR's) spellings, and older or official names seen in exports
    "Bosnia & Herzegovina": "BA",
    "Congo - Kinshasa": "CD",
    "Congo - Brazzaville": "CG",
    "Myanmar (Burma)": "MM",
    "Czech Republic": "CZ",
    "Turkey": "TR",
    "U.S. Virgin Islands": "VI",
    "Macau": "MO",
    "Cape Verde": "CV",
    "Heard & McDonald Islands": "HM",
    "Svalbard & Jan Mayen": "SJ",
    "Wallis & Futuna": "WF",
    "U.S. Outlying Islands": "UM",
    "Pitcairn Islands": "PN",
    "Nauru": "NR",
    "Kosovo": "XK",
    "Caribbean Netherlands": "BQ",
    "South Georgia & South Sandwich Islands": "GS",
    "Swaziland": "SZ",
    "Macedonia (FYROM)": "MK",
    "Falkland Islands (Islas Malvinas)": "FK",
    "St. Vincent & Grenadines": "VC",
    "Côte d’Ivoire": "CI",
    "Ivory Coast": "CI",
    "Vatican": "VA",
    "Palestinian Territories": "PS",
    "Hong Kong SAR China": "HK",
    "Macao SAR China": "MO",
    "Micronesia (Federated States of)": "FM",
    "Korea": "KR",
    "Brunei Darussalam": "BN",
    "Russian Federation": "RU",
    "Viet Nam": "VN",
    "Syrian Arab Republic": "SY",
    "Lao People's Democratic Republic": "LA",
    "East Timor": "TL",
    "Burma": "MM",
    "The Bahamas": "BS",
    "The Gambia": "GM",
}


def _folded(name: str) -> str:
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
    text = re.sub(r"\bst\.? ", "saint ", text.replace("&", " and "))
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text).split())


_BY_FOLDED = {_folded(name): code for name, code in NAMES.items()}


@lru_cache(maxsize=1024)
def country_code(name: str | None) -> str | None:
    """The ISO code of a country's English name ("United States" -> "US"); a two-letter
    code passes through (upper-cased); None for "(not set)" and names not known."""
    if not name:
        return None
    if len(name) == 2 and name.isalpha():
        return name.upper()
    return _BY_FOLDED.get(_folded(name))
