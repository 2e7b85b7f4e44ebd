"""The chat template both servers apply to the model: Gemma's turn format, written here
because the GGUF of the base model carries none.

Each message becomes ``<start_of_turn>{role}\\n{content}<end_of_turn>\\n`` with the
assistant's role spelled ``model``; Gemma has no system role, so system messages open the
first user turn, as Gemma's own template does. With ``add_generation_prompt`` the text ends
with an open model turn. Content given as a list of parts keeps its text parts.
"""

from __future__ import annotations

from pathlib import Path

TEMPLATE = """\
{{- bos_token -}}
{%- set ns = namespace(system='') -%}
{%- for message in messages -%}
{%- if message['content'] is string -%}
{%- set text = message['content'] -%}
{%- else -%}
{%- set text = message['content'] | selectattr('type', 'equalto', 'text') \
| map(attribute='text') | join('\\n') -%}
{%- endif -%}
{%- if message['role'] == 'system' -%}
{%- set ns.system = ns.system + text + '\\n\\n' -%}
{%- else -%}
{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}
<start_of_turn>{{ role }}
{{ ns.system if role == 'user' else '' }}{{ text | trim }}<end_of_turn>
{% if role == 'user' %}{%- set ns.system = '' -%}{% endif %}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<start_of_turn>model
{% endif -%}
"""


def write_chat_template(root: Path) -> Path:
    """Write the template under the cache (every time: it is tiny and may have changed)."""
    path = root / "templates" / "gemma-turns.jinja"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TEMPLATE)
    return path
