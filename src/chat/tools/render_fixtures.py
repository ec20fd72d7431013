#!/usr/bin/env python3
"""Regenerates src/chat/testdata/*.json: the expected renders of every chat template in
../shared/testdata/chat-templates/ over a fixed set of conversations, produced by Python's jinja2
with Hugging Face's environment settings (transformers' apply_chat_template):
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]),
tojson = json.dumps(ensure_ascii=False, indent=..., sort_keys=False), raise_exception and
strftime_now globals. strftime_now uses a fixed date (FIXED_NOW) so renders are reproducible.

Each output file holds one template x case: {"template", "case", "context", "expected"} where
expected is {"output": str} or {"error": str, "raised": bool} (raised: the template called
raise_exception, so the message is the template's own). CI only compares; run this script after
changing the cases:  python3 src/chat/tools/render_fixtures.py
"""
import copy
import datetime
import json
import pathlib
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = pathlib.Path(__file__).resolve().parents[3]
TEMPLATES = ROOT.parent / "shared" / "testdata" / "chat-templates"
OUT = ROOT / "src" / "chat" / "testdata"

FIXED_NOW = datetime.datetime(2025, 3, 7, 14, 5, 9)
BOS = "<BOS>"
EOS = "<EOS>"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a city. Use \"metric\" units by default.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. Zürich"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    "days": {"type": "integer", "minimum": 1, "maximum": 7, "default": 1},
                    "threshold": {"type": "number", "default": 0.5},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    },
]

TOOL_CALL = {
    "id": "call12345",
    "type": "function",
    "function": {"name": "get_weather", "arguments": {"city": "Zürich", "days": 2}},
}

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
U1 = {"role": "user", "content": "Hello! What can you do?"}
A1 = {"role": "assistant", "content": "I can answer questions & help with <tasks>."}
U2 = {"role": "user", "content": "Tell me a joke about \"cats\".\nKeep it short."}
A2 = {"role": "assistant", "content": "Why did the cat sit on the computer? To keep an eye on the mouse."}

CASES = {
    "user_only": dict(messages=[U1], add_generation_prompt=True),
    "system_user": dict(messages=[SYSTEM, U1], add_generation_prompt=True),
    "multi_turn": dict(messages=[SYSTEM, U1, A1, U2], add_generation_prompt=True),
    "multi_turn_no_gen": dict(messages=[SYSTEM, U1, A1, U2, A2], add_generation_prompt=False),
    "no_system_multi": dict(messages=[U1, A1, U2], add_generation_prompt=True),
    "unicode": dict(messages=[{"role": "user", "content": "Grüße aus Köln 🌍 — 日本語 '\t'"}],
                    add_generation_prompt=True),
    "tools_defined": dict(messages=[SYSTEM, {"role": "user", "content": "Weather in Zürich?"}],
                          tools=TOOLS, add_generation_prompt=True),
    "tool_call_roundtrip": dict(
        messages=[
            {"role": "user", "content": "Weather in Zürich?"},
            {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]},
            {"role": "tool", "tool_call_id": "call12345", "name": "get_weather",
             "content": "{\"temperature\": 21.5, \"unit\": \"celsius\"}"},
        ],
        tools=TOOLS, add_generation_prompt=True),
    "tool_call_final": dict(
        messages=[
            SYSTEM,
            {"role": "user", "content": "Weather in Zürich?"},
            {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]},
            {"role": "tool", "tool_call_id": "call12345", "name": "get_weather",
             "content": "{\"temperature\": 21.5, \"unit\": \"celsius\"}"},
            {"role": "assistant", "content": "It is 21.5 °C in Zürich."},
        ],
        tools=TOOLS, add_generation_prompt=False),
    "content_parts": dict(
        messages=[SYSTEM, {"role": "user", "content": [{"type": "text", "text": "Describe this."},
                                                        {"type": "text", "text": "Be brief."}]}],
        add_generation_prompt=True),
    "reasoning_history": dict(
        messages=[U1, {"role": "assistant", "content": "Hi! I can help.",
                       "reasoning_content": "The user greets me; answer politely."}, U2],
        add_generation_prompt=True, extra={"enable_thinking": True}),
    "tool_call_string_args": dict(
        messages=[
            {"role": "user", "content": "Search for jinja2."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call67890", "type": "function",
                 "function": {"name": "search", "arguments": "{\"query\": \"jinja2\"}"}}]},
            {"role": "tool", "tool_call_id": "call67890", "name": "search", "content": "Jinja2 is a template engine."},
        ],
        tools=TOOLS, add_generation_prompt=True),
    "functions_kwarg": dict(messages=[SYSTEM, U1], add_generation_prompt=True,
                            extra={"functions": json.dumps([t["function"] for t in TOOLS], indent=2),
                                   "datetime": "2025-03-07"}),
    "legacy_tools": dict(
        messages=[{"role": "user", "content": "Weather in Zürich?"}],
        tools=[{"name": "get_weather", "description": "Get the weather.",
                "parameter_definitions": {"city": {"description": "City", "type": "str", "required": True}}}],
        add_generation_prompt=True),
    "extra_kwargs": dict(messages=[U1, A1, U2], add_generation_prompt=True,
                         extra={"enable_thinking": False, "reasoning_effort": "high"}),
}


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return FIXED_NOW.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


class Raised(Exception):
    pass


def render(env, source, case):
    ctx = {
        "messages": copy.deepcopy(case["messages"]),
        "tools": copy.deepcopy(case.get("tools")),
        "documents": None,
        "add_generation_prompt": case["add_generation_prompt"],
        "bos_token": BOS,
        "eos_token": EOS,
    }
    ctx.update(copy.deepcopy(case.get("extra", {})))
    template = env.from_string(source)
    return template.render(**ctx)


def main():
    env = make_env()
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.json"):
        old.unlink()
    count = 0
    for path in sorted(TEMPLATES.glob("*.jinja")):
        source = path.read_text()
        for name, case in CASES.items():
            try:
                expected = {"output": render(env, source, case)}
            except jinja2.exceptions.TemplateError as e:
                raised = type(e) is jinja2.exceptions.TemplateError
                expected = {"error": str(e), "raised": raised}
            except Exception as e:  # noqa: BLE001 - e.g. TypeError inside a template
                expected = {"error": f"{type(e).__name__}: {e}", "raised": False}
            context = {
                "messages": case["messages"],
                "tools": case.get("tools"),
                "add_generation_prompt": case["add_generation_prompt"],
                "bos_token": BOS,
                "eos_token": EOS,
                "extra": case.get("extra", {}),
                "now": FIXED_NOW.isoformat(),
            }
            doc = {"template": path.name, "case": name, "context": context, "expected": expected}
            out = OUT / f"{path.stem}.{name}.json"
            out.write_text(json.dumps(doc, ensure_ascii=False) + "\n")
            count += 1
    print(f"wrote {count} fixtures to {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
