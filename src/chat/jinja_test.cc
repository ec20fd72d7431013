// Unit tests of the Jinja2 interpreter. The expected strings of kRenderCases were produced by
// Python's jinja2 3.1 with HF's environment (trim_blocks, lstrip_blocks, loopcontrols, HF tojson).
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "chat/value.h"

namespace herd::chat {
namespace {

Result<std::string> RenderSource(std::string_view source, ChatContext ctx = {}) {
  HERD_ASSIGN_OR_RETURN(ChatTemplate t, ChatTemplate::Parse(source));
  return t.Render(ctx);
}

struct RenderCase {
  const char* source;
  const char* expected;
};

const RenderCase kRenderCases[] = {
    {R"J({{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ 7 / 2 }} {{ 4 / 2 }} {{ 2 ** 10 }} {{ 1e20 }} {{ 0.1 + 0.2 }} {{ 1.5e-7 }})J",
     R"J(3 -4 -2 3.5 2.0 1024 1e+20 0.30000000000000004 1.5e-07)J"},
    {R"J({{ [1, 'a', None, True, 1.5] }} {{ {'a': (1, 2), 'b': {'c': 'it\'s'}} }} {{ (1,) }} {{ none }} {{ false }})J",
     R"J([1, 'a', None, True, 1.5] {'a': (1, 2), 'b': {'c': "it's"}} (1,) None False)J"},
    {R"J({{ 'ab' * 3 }}|{{ 'x' ~ 1 ~ none ~ true }}|{{ undefined_var }}|{{ 'a' if false }}|{{ 'y' if 1 > 2 else 'n' }})J",
     R"J(ababab|x1NoneTrue|||n)J"},
    {R"J({{ 'hello world'[::-1] }} {{ [1,2,3,4,5][1:4] }} {{ [1,2,3,4,5][::2] }} {{ 'abc'[-1] }} {{ 'Grüße'[1:3] }})J",
     R"J(dlrow olleh [2, 3, 4] [1, 3, 5] c rü)J"},
    {R"J({% for x in [3, 4, 5] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }};{% endfor %})J",
     R"J(103TrueFalse34;212FalseFalse335;321FalseTrue34;)J"},
    {R"J({% for x in [] %}a{% else %}empty{% endfor %}{% for x in range(10) if x is odd %}{{ x }}{% if x > 5 %}{% break %}{% endif %}{% endfor %}{% for x in range(5) %}{% if x == 2 %}{% continue %}{% endif %}{{ x }}{% endfor %})J",
     R"J(empty13570134)J"},
    {R"J({% set ns = namespace(n=0, items=[]) %}{% for i in range(3) %}{% set ns.n = ns.n + i %}{% set local = i %}{% endfor %}{{ ns.n }}{{ local is defined }})J",
     R"J(3False)J"},
    {R"J({% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bo') }} {{ greet('Al', punct='?') }} {{ greet(name='Cy') }})J",
     R"J(Hi Bo! Hi Al? Hi Cy!)J"},
    {R"J({% set a, b = [1, 2] %}{{ b }}{{ a }}{% set block %}  x {{ a }} {% endset %}[{{ block }}]{% filter upper %}shout {{ b }}{% endfilter %})J",
     R"J(21[  x 1 ]SHOUT 2)J"},
    {R"J({{ '  pad  ' | trim }}|{{ 'xxhixx'.strip('x') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'Hello'.startswith('He') }}|{{ 'hello world'.title() }}|{{ 'hELLO'.capitalize() }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'abcabc'.find('c') }}|{{ 'abcabc'.count('b') }}|{{ '-'.join(['x', 'y']) }})J",
     R"J(pad|hi|['a', 'b', '', 'c']|['a', 'b']|True|Hello World|Hello|bba|2|2|x-y)J"},
    {R"J({{ {'b': 1, 'a': [1, 2.5, 'ü', None, true]} | tojson }}|{{ {'b': 1, 'a': {}} | tojson(indent=2) }}|{{ [] | tojson(indent=2) }}|{{ 'q"\\\n' | tojson }})J",
     R"J({"b": 1, "a": [1, 2.5, "ü", null, true]}|{
  "b": 1,
  "a": {}
}|[]|"q\"\\\n")J"},
    {R"J({{ [3, 1, 2] | length }} {{ 'abc' | count }} {{ [1, 2] | join(', ') }} {{ [{'n': 'a'}, {'n': 'b'}] | map(attribute='n') | join }} {{ [1, none, 2] | select | list }} {{ [1, 2, 3, 4] | reject('even') | list }} {{ [{'r': 'u'}, {'r': 'a'}] | selectattr('r', 'equalto', 'a') | list }} {{ [{'r': 'u'}, {'r': 'a'}] | rejectattr('r', '==', 'a') | list }})J",
     R"J(3 3 1, 2 ab [1, 2] [1, 3] [{'r': 'a'}] [{'r': 'u'}])J"},
    {R"J({{ [1, 2, 3] | first }}{{ [1, 2, 3] | last }} {{ nothing | default('dflt') }} {{ '' | default('e', true) }} {{ 'aBc' | upper }}{{ 'aBc' | lower }} {{ 'a b' | title }} {{ 'x-y' | replace('-', '+') }} {{ 5 | string }} {{ '42' | int + 1 }} {{ '2.5' | float }} {{ 'abc' | list }} {{ {'b': 1, 'A': 2, 'c': 3} | dictsort }} {{ {'x': 1} | items | list }} {{ -3 | abs }} {{ 2.567 | round(2) }} {{ 'l1
l2

l3' | indent(2) }} {{ '<a href="x">' | e }} {{ [1, 2, 1] | unique | list }})J",
     R"J(13 dflt e ABCabc A B x+y 5 43 2.5 ['a', 'b', 'c'] [('A', 2), ('b', 1), ('c', 3)] [('x', 1)] 3 2.57 l1
  l2

  l3 &lt;a href=&#34;x&#34;&gt; [1, 2])J"},
    {R"J({{ 1 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 'a' is string }}{{ {} is mapping }}{{ [] is iterable }}{{ 1 is number }}{{ none is none }}{{ x is undefined }}{{ true is true }}{{ 1 is true }}{{ 'x' is not string }}{{ 'a' in 'cat' }}{{ 3 not in [1, 2] }}{{ 'k' in {'k': 1} }})J",
     R"J(TrueTrueTrueTrueTrueTrueTrueTrueTrueTrueFalseFalseTrueTrueTrue)J"},
    {R"J({{ {'a': 1}.get('a') }}{{ {'a': 1}.get('b', 'z') }}{{ {'a': 1}.get('b') }}{% for k, v in {'x': 1, 'y': 2}.items() %}{{ k }}={{ v }};{% endfor %}{{ {'a': 1}.keys() | list }}{{ {'a': 1}.values() | list }})J",
     R"J(1zNonex=1;y=2;['a'][1])J"},
    {R"J(  {% if true %}
  yes
  {% endif %}
{%- if true -%}
  tight  
{%- endif %}
{{- ' end ' -}}
  {%+ if true %}kept{% endif %}
{# comment #}
after)J",
     R"J(  yes
tight end keptafter)J"},
    {R"J({{ 'a' | safe + '<b>' }}|{{ '<b>' + 'a' | safe }}|{{ 'x' ~ '<' | safe }}|{{ 3 > 2 > 1 }}|{{ not 1 == 2 }}|{{ 1 and 'x' }}|{{ 0 or 'y' }}|{{ -2 ** 2 }}|{{ 1 + 2 * 3 - 4 / 2 }})J",
     R"J(a&lt;b&gt;|&lt;b&gt;a|x<|True|True|x|y|4|5.0)J"},
};

TEST(Jinja, RendersLikePythonJinja2) {
  for (const RenderCase& c : kRenderCases) {
    Result<std::string> out = RenderSource(c.source);
    ASSERT_TRUE(out.ok()) << c.source << "\n" << out.status().ToString();
    EXPECT_EQ(*out, c.expected) << c.source;
  }
}

TEST(Jinja, VariablesFromContext) {
  ChatContext ctx;
  ctx.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi", "n": 1.0}])");
  ctx.bos_token = "<s>";
  ctx.add_generation_prompt = true;
  ctx.extra = {{"flag", false}};
  Result<std::string> out = RenderSource(
      "{{ bos_token }}{{ messages[0].role }}:{{ messages[0]['content'] }}:{{ messages[0].n }}:{{ tools }}:"
      "{{ add_generation_prompt }}:{{ flag }}:{{ messages[0].missing is defined }}",
      ctx);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "<s>user:hi:1.0:None:True:False:False");
}

TEST(Jinja, StrftimeNowUsesInjectedClock) {
  ChatContext ctx;
  ctx.strftime_now = [](const std::string& fmt) { return "[" + fmt + "]"; };
  Result<std::string> out = RenderSource("{{ strftime_now('%d %b %Y') }}", ctx);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "[%d %b %Y]");
}

TEST(Jinja, UndefinedSemantics) {
  EXPECT_EQ(*RenderSource("[{{ nope }}]{% for x in nope %}x{% endfor %}{{ nope | length }}{{ nope is defined }}"),
            "[]0False");
  // Attribute access on an undefined value fails as in jinja2.
  Result<std::string> attr = RenderSource("{{ nope.field }}");
  ASSERT_FALSE(attr.ok());
  EXPECT_EQ(attr.status().message(), "line 1, column 8: 'nope' is undefined");
  Result<std::string> missing = RenderSource("{{ {'a': 1}.b.c }}");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("'dict object' has no attribute 'b'"), std::string::npos);
  EXPECT_FALSE(RenderSource("{{ nope + 1 }}").ok());
  EXPECT_FALSE(RenderSource("{{ nope() }}").ok());
}

TEST(Jinja, RaiseExceptionCarriesMessageAndLocation) {
  Result<std::string> out = RenderSource("line one\n  {{- raise_exception('Roles must alternate') }}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(), "line 2, column 7: Roles must alternate");
}

TEST(Jinja, SyntaxErrorsHaveLineAndColumn) {
  Result<ChatTemplate> unclosed = ChatTemplate::Parse("{% if x %}\nyes\n");
  ASSERT_FALSE(unclosed.ok());
  EXPECT_NE(unclosed.status().message().find("expected 'elif' or 'else' or 'endif'"), std::string::npos)
      << unclosed.status().message();
  Result<ChatTemplate> bad = ChatTemplate::Parse("ok\n{{ 1 + }}");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "line 2, column 8: unexpected '}}'");
  Result<ChatTemplate> tag = ChatTemplate::Parse("{% frobnicate %}");
  ASSERT_FALSE(tag.ok());
  EXPECT_EQ(tag.status().message(), "line 1, column 4: unknown tag 'frobnicate'");
  EXPECT_FALSE(ChatTemplate::Parse("{{ 'unterminated }}").ok());
  EXPECT_FALSE(ChatTemplate::Parse("{# open comment").ok());
}

TEST(Jinja, ImmutableSandboxRejectsMutation) {
  Result<std::string> out = RenderSource("{% set xs = [] %}{% set _ = xs.append(1) %}");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("access to attribute 'append' of 'list' object is unsafe."), std::string::npos);
}

TEST(Jinja, TrailingNewlineDropped) {
  EXPECT_EQ(*RenderSource("a\n"), "a");
  EXPECT_EQ(*RenderSource("a\n\n"), "a\n");
  EXPECT_EQ(*RenderSource("a\r\nb"), "a\nb");
}

TEST(Value, PythonReprOfFloats) {
  EXPECT_EQ(FloatRepr(1.0), "1.0");
  EXPECT_EQ(FloatRepr(0.1), "0.1");
  EXPECT_EQ(FloatRepr(-2.5), "-2.5");
  EXPECT_EQ(FloatRepr(1e16), "1e+16");
  EXPECT_EQ(FloatRepr(123456789012345.0), "123456789012345.0");
  EXPECT_EQ(FloatRepr(0.0001), "0.0001");
  EXPECT_EQ(FloatRepr(0.00001), "1e-05");
  EXPECT_EQ(FloatRepr(1.0 / 3), "0.3333333333333333");
}

TEST(Value, JsonLikePythonDumps) {
  ValueDict d;
  d.Set(Value::String("é"), Value::List({Value::Int(1), Value::Float(2.0), Value::None(), Value::Bool(false)}));
  Value v = Value::Dict(std::move(d));
  EXPECT_EQ(*ToJson(v), R"({"é": [1, 2.0, null, false]})");
  JsonOptions ascii;
  ascii.ensure_ascii = true;
  EXPECT_EQ(*ToJson(Value::String("é😀\x01")), "\"é😀\\u0001\"");
  EXPECT_EQ(*ToJson(Value::String("é😀"), ascii), R"("\u00e9\ud83d\ude00")");
  JsonOptions indent;
  indent.indent = 2;
  EXPECT_EQ(*ToJson(v, indent), "{\n  \"é\": [\n    1,\n    2.0,\n    null,\n    false\n  ]\n}");
  EXPECT_FALSE(ToJson(Value::Undefined()).ok());
}

TEST(DefaultTemplate, RendersChatML) {
  ChatContext ctx;
  ctx.messages = nlohmann::ordered_json::parse(
      R"([{"role": "system", "content": "Be nice."}, {"role": "user", "content": "Hi"}])");
  ctx.add_generation_prompt = true;
  Result<std::string> out = ChatTemplate::Default().Render(ctx);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "<|im_start|>system\nBe nice.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

}  // namespace
}  // namespace herd::chat
