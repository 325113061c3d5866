"""What make_renders.py and make_constructs.py share: transformers' chat-template module with the
clock behind its `strftime_now` global pinned (transformers defines it as
`datetime.now().strftime(format)`, `datetime` looked up in chat_template_utils' module globals),
and the way both write their records and summarise them."""
import datetime as _dt
import json
import os

import jinja2
import transformers
import transformers.utils.chat_template_utils as ctu

HERE = os.path.dirname(os.path.abspath(__file__))
PINNED_NOW = _dt.datetime(2026, 7, 26, 0, 0, 0)


class _PinnedDatetime(_dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return PINNED_NOW


ctu.datetime = _PinnedDatetime


def write_records(file_name, records, what):
    """records as JSON (UTF-8 kept, one space indent, final newline) in HERE/file_name, then one
    line of versions and one of counts: how many rendered, how many raised, by exception type."""
    with open(os.path.join(HERE, file_name), "w", encoding="utf-8") as f:
        json.dump(records, f, ensure_ascii=False, indent=1)
        f.write("\n")
    ok = sum(1 for r in records if "output" in r)
    errs = {}
    for r in records:
        if "error_type" in r:
            errs[r["error_type"]] = errs.get(r["error_type"], 0) + 1
    print(f"transformers {transformers.__version__}, jinja2 {jinja2.__version__}, now={PINNED_NOW.isoformat()}")
    print(f"{len(records)} {what}: {ok} ok, {len(records) - ok} raised {errs}")
