/**
 * Rust (serde): one struct per object type, string enums as Rust enums, unions as untagged
 * enums, one struct per message type (without its `type`) and `Message`, an enum tagged by
 * `type` (`#[serde(tag = "type")]`), with `parse_message(&str)`. Needs serde (derive) and
 * serde_json.
 */
import { declOf, pascal, type Decl, type Model, type TypeRef } from './model.ts';

const RUST_KEYWORDS = new Set([
  'as',
  'break',
  'const',
  'continue',
  'crate',
  'else',
  'enum',
  'extern',
  'false',
  'fn',
  'for',
  'if',
  'impl',
  'in',
  'let',
  'loop',
  'match',
  'mod',
  'move',
  'mut',
  'pub',
  'ref',
  'return',
  'self',
  'static',
  'struct',
  'super',
  'trait',
  'true',
  'type',
  'unsafe',
  'use',
  'where',
  'while',
  'async',
  'await',
  'dyn',
  'abstract',
  'become',
  'box',
  'do',
  'final',
  'macro',
  'override',
  'priv',
  'typeof',
  'unsized',
  'virtual',
  'yield',
  'try',
]);
const PRELUDE = new Set(['None', 'Some', 'Ok', 'Err', 'Option', 'Result', 'String', 'Vec', 'Box']);

function doc(text: string, indent = ''): string {
  return text
    .split('\n')
    .map((l) => `${indent}/// ${l}`.trimEnd())
    .join('\n');
}

function fieldIdent(name: string): string {
  return RUST_KEYWORDS.has(name) ? `r#${name}` : name;
}

function variantIdent(value: string, i: number): string {
  const v = pascal(value);
  return v === '' ? `Value${i + 1}` : /^[0-9]/.test(v) ? `V${v}` : v;
}

/** Generates the Rust module; `tap_types.rs`. */
export function generateRust(model: Model): Map<string, string> {
  const messageStructs = new Set(model.messages.map((m) => m.struct));

  const rustType = (t: TypeRef): string => {
    switch (t.k) {
      case 'string':
        return 'String';
      case 'integer':
        return 'i64';
      case 'number':
        // serde_json's Number keeps an integer an integer: an f64 would write 90 back as 90.0.
        return 'Number';
      case 'boolean':
        return 'bool';
      case 'null':
      case 'any':
        return 'Value';
      case 'array':
        return `Vec<${rustType(t.items)}>`;
      case 'map':
        return `BTreeMap<String, ${rustType(t.values)}>`;
      case 'nullable':
        return `Option<${rustType(t.inner)}>`;
      case 'ref':
        return declOf(model, t.name).name;
    }
  };
  /** JSON null is a value of the type (an absent optional member must stay distinguishable). */
  const holdsNull = (t: TypeRef) => t.k === 'any' || t.k === 'null' || t.k === 'nullable';

  const declaration = (d: Decl): string => {
    const head = doc(d.description || d.name);
    switch (d.kind) {
      case 'enum':
        return `${head}\n#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]\npub enum ${d.name} {\n${d.values.map((v, i) => `    #[serde(rename = ${JSON.stringify(v)})]\n    ${variantIdent(v, i)},`).join('\n')}\n}`;
      case 'alias':
        return `${head}\npub type ${d.name} = ${rustType(d.type)};`;
      case 'union': {
        const variants = d.variants.map((v, i) => {
          let name = v.k === 'ref' ? v.name : pascal(v.k);
          if (name.startsWith(d.name) && name.length > d.name.length) name = name.slice(d.name.length);
          if (PRELUDE.has(name) || name === '') name = v.k === 'ref' ? v.name : `Variant${i + 1}`;
          return `    ${name}(${rustType(v)}),`;
        });
        return `${head}\n#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]\n#[serde(untagged)]\npub enum ${d.name} {\n${variants.join('\n')}\n}`;
      }
      case 'object': {
        const isMessage = messageStructs.has(d.name);
        const fields = d.fields
          .filter((f) => !(isMessage && f.name === 'type'))
          .map((f) => {
            const lines: string[] = [];
            if (f.description) lines.push(doc(f.description, '    '));
            const base = rustType(f.type);
            if (f.required) lines.push(`    pub ${fieldIdent(f.name)}: ${base},`);
            else if (holdsNull(f.type)) {
              lines.push(
                '    #[serde(\n        default,\n        deserialize_with = "present",\n        skip_serializing_if = "Option::is_none"\n    )]',
                `    pub ${fieldIdent(f.name)}: Option<${base}>,`,
              );
            } else
              lines.push(
                '    #[serde(default, skip_serializing_if = "Option::is_none")]',
                `    pub ${fieldIdent(f.name)}: Option<${base}>,`,
              );
            return lines.join('\n');
          });
        fields.push(
          '    /// Members the schema does not name, kept as they came.\n    #[serde(flatten)]\n    pub extra: BTreeMap<String, Value>,',
        );
        return `${head}\n#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]\npub struct ${d.name} {\n${fields.join('\n')}\n}`;
      }
    }
  };

  const variantOf = (type: string) => pascal(type);
  const text = `//! TAP 1.0 message types, generated from schemas/v1 by \`tapctl gen-types --lang rust\`. Do not edit.
//!
//! \`parse_message\` decodes one message into \`Message\`, an enum tagged by \`type\`; serde
//! checks required members and JSON types. Patterns, ranges and conditional rules are left to
//! validation against the JSON Schemas. Needs \`serde\` (with \`derive\`) and \`serde_json\`.
#![allow(clippy::large_enum_variant)]

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Number, Value};
use std::collections::BTreeMap;

/// Deserializes a member that is present (even as null) into \`Some\`, so that an absent
/// optional member (\`None\`) and a present null (\`Some(Value::Null)\`) stay apart.
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

${model.decls.map(declaration).join('\n\n')}

/// Any TAP 1.0 message, tagged by its member \`type\`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Message {
${model.messages.map((m) => `    #[serde(rename = ${JSON.stringify(m.type)})]\n    ${variantOf(m.type)}(${m.struct}),`).join('\n')}
}

impl Message {
    /// The wire type, e.g. "task.request".
    pub fn message_type(&self) -> &'static str {
        match self {
${model.messages.map((m) => `            Message::${variantOf(m.type)}(_) => ${JSON.stringify(m.type)},`).join('\n')}
        }
    }
}

/// Decodes one TAP message from its JSON text.
pub fn parse_message(text: &str) -> Result<Message, serde_json::Error> {
    serde_json::from_str(text)
}

/// Decodes one TAP message from a JSON value.
pub fn message_from_value(value: Value) -> Result<Message, serde_json::Error> {
    serde_json::from_value(value)
}
`;
  return new Map([['tap_types.rs', text]]);
}
