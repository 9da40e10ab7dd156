/**
 * Go: one file, one struct per object type with json tags (optional members as pointers or
 * omitempty), string enums as named string types with constants and Valid(), unions as structs
 * with custom JSON methods, one struct per message type implementing Message, and
 * ParseMessage([]byte), which switches on `type`, checks the required members of the envelope
 * and the payload, and decodes into that message's struct. Every struct keeps the members its
 * schema does not name in `Extra` and writes them back, so a decode/encode round trip loses
 * nothing (spec: envelope#extensibility).
 */
import { declOf, type Decl, type Model, type TypeRef } from './model.ts';

const INITIALISMS = new Map([
  ['id', 'ID'],
  ['url', 'URL'],
  ['json', 'JSON'],
  ['http', 'HTTP'],
  ['api', 'API'],
  ['uri', 'URI'],
]);

/** An exported Go name: "agent_id" → "AgentID". */
export function goName(s: string): string {
  const name = s
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => INITIALISMS.get(w.toLowerCase()) ?? w[0]!.toUpperCase() + w.slice(1))
    .join('');
  return /^[0-9]/.test(name) ? `V${name}` : name || 'Value';
}

/**
 * Lines of a struct or const block as gofmt writes them: runs of consecutive cell rows (not
 * broken by a comment line) get their columns padded to a common width.
 */
function aligned(rows: Array<string | string[]>, indent = '\t'): string {
  const out: string[] = [];
  let run: string[][] = [];
  const flush = () => {
    const widths = run.reduce<number[]>((w, cells) => cells.map((c, i) => Math.max(w[i] ?? 0, c.length)), []);
    for (const cells of run) out.push(indent + cells.map((c, i) => (i < cells.length - 1 ? c.padEnd(widths[i]!) : c)).join(' '));
    run = [];
  };
  for (const row of rows) {
    if (typeof row === 'string') {
      flush();
      out.push(row);
    } else run.push(row);
  }
  flush();
  return out.join('\n');
}

function comment(text: string, indent = ''): string {
  return text
    .split('\n')
    .map((l) => `${indent}// ${l}`.trimEnd())
    .join('\n');
}

/** Generates the Go package; `tap_types.go`. */
export function generateGo(model: Model, pkg = 'tap'): Map<string, string> {
  // An optional array or map is a pointer too, so that a present empty one ([] or {}) survives a round trip.
  const isPointerless = (t: TypeRef): boolean => t.k === 'any' || t.k === 'nullable';

  const goType = (t: TypeRef): string => {
    switch (t.k) {
      case 'string':
        return 'string';
      case 'integer':
        return 'int64';
      case 'number':
        return 'float64';
      case 'boolean':
        return 'bool';
      case 'null':
      case 'any':
        return 'json.RawMessage';
      case 'array':
        return `[]${goType(t.items)}`;
      case 'map':
        return `map[string]${goType(t.values)}`;
      case 'nullable':
        return `*${goType(t.inner)}`;
      case 'ref':
        return declOf(model, t.name).name;
    }
  };

  const messageOf = new Map(model.messages.map((m) => [m.struct, m.type]));
  const out: string[] = [];

  const declaration = (d: Decl): string => {
    const doc = comment(d.description ? `${d.name}: ${d.description}` : `${d.name}.`);
    switch (d.kind) {
      case 'enum': {
        const consts = aligned(d.values.map((v) => [`${d.name}${goName(v)}`, d.name, '=', JSON.stringify(v)]));
        return (
          `${doc}\ntype ${d.name} string\n\n// Values of ${d.name}.\nconst (\n${consts}\n)\n\n` +
          `// Valid reports whether v is one of the values of ${d.name}.\nfunc (v ${d.name}) Valid() bool {\n\tswitch v {\n\tcase ${d.values.map((v) => `${d.name}${goName(v)}`).join(', ')}:\n\t\treturn true\n\t}\n\treturn false\n}`
        );
      }
      case 'alias':
        return `${doc}\ntype ${d.name} = ${goType(d.type)}`;
      case 'union': {
        const variants = d.variants.map((v) => ({ field: v.k === 'ref' ? v.name : goName(v.k), type: goType(v), t: v }));
        const fields = aligned(variants.map((v) => [v.field, `*${v.type}`]));
        const marshal = variants.map((v) => `\tif u.${v.field} != nil {\n\t\treturn json.Marshal(u.${v.field})\n\t}`).join('\n');
        const unmarshal = variants
          .map((v) => {
            const valid = v.t.k === 'ref' && declOf(model, v.t.name).kind === 'enum' ? ' && x.Valid()' : '';
            return `\t{\n\t\tvar x ${v.type}\n\t\tif err := json.Unmarshal(data, &x); err == nil${valid} {\n\t\t\t*u = ${d.name}{${v.field}: &x}\n\t\t\treturn nil\n\t\t}\n\t}`;
          })
          .join('\n');
        return (
          `${doc}\n// Exactly one field is set.\ntype ${d.name} struct {\n${fields}\n}\n\n` +
          `// MarshalJSON writes the alternative that is set.\nfunc (u ${d.name}) MarshalJSON() ([]byte, error) {\n${marshal}\n\treturn []byte("null"), nil\n}\n\n` +
          `// UnmarshalJSON reads the first alternative that matches.\nfunc (u *${d.name}) UnmarshalJSON(data []byte) error {\n${unmarshal}\n\treturn fmt.Errorf("tap: %s matches no alternative of ${d.name}", data)\n}`
        );
      }
      case 'object': {
        const messageType = messageOf.get(d.name);
        const rows: Array<string | string[]> = [];
        for (const f of d.fields) {
          const base = goType(f.type);
          const type = f.required || isPointerless(f.type) ? base : `*${base}`;
          const tag = f.required ? f.name : `${f.name},omitempty`;
          if (f.name === 'type' && messageType) rows.push(`\t// Type is always ${JSON.stringify(messageType)}.`);
          else if (f.description) rows.push(comment(f.description, '\t'));
          rows.push([goName(f.name), type, `\`json:"${tag}"\``]);
        }
        rows.push('\t// Extra holds the members the schema does not name, kept as they came.');
        rows.push(['Extra', 'map[string]json.RawMessage', '`json:"-"`']);
        const members = d.fields.map((f) => JSON.stringify(f.name)).join(', ');
        let text = `${doc}\ntype ${d.name} struct {\n${aligned(rows)}\n}`;
        text +=
          `\n\n// UnmarshalJSON decodes the members ${d.name} names and keeps the others in Extra.\nfunc (x *${d.name}) UnmarshalJSON(data []byte) error {\n\ttype plain ${d.name}\n\tif err := json.Unmarshal(data, (*plain)(x)); err != nil {\n\t\treturn err\n\t}\n\textra, err := unknownMembers(data, ${members ? `[]string{${members}}` : 'nil'})\n\tx.Extra = extra\n\treturn err\n}` +
          `\n\n// MarshalJSON writes the members ${d.name} names, then those in Extra.\nfunc (x ${d.name}) MarshalJSON() ([]byte, error) {\n\ttype plain ${d.name}\n\treturn withExtra(plain(x), x.Extra)\n}`;
        if (messageType)
          text += `\n\n// MessageType returns ${JSON.stringify(messageType)}.\nfunc (*${d.name}) MessageType() string { return ${JSON.stringify(messageType)} }`;
        return text;
      }
    }
  };

  for (const d of model.decls) out.push(declaration(d));

  const quoteList = (xs: string[]) => `[]string{${xs.map((x) => JSON.stringify(x)).join(', ')}}`;
  const cases = model.messages
    .map((m) => {
      const struct = declOf(model, m.struct) as Extract<Decl, { kind: 'object' }>;
      const payload = declOf(model, m.payload) as Extract<Decl, { kind: 'object' }>;
      return `\tcase ${JSON.stringify(m.type)}:\n\t\tmsg = &${m.struct}{}\n\t\trequired = ${quoteList(struct.fields.filter((f) => f.required).map((f) => f.name))}\n\t\tpayloadRequired = ${quoteList(payload.fields.filter((f) => f.required).map((f) => f.name))}`;
    })
    .join('\n');

  const text = `// Code generated by tapctl gen-types from schemas/v1; DO NOT EDIT.

// Package ${pkg} holds the TAP 1.0 message types, generated from the JSON Schemas.
//
// ParseMessage decodes one message into the struct of its type. It checks the required
// members of the envelope and of the payload and the JSON types of every member it decodes;
// patterns, ranges and conditional rules are left to validation against the schemas.
package ${pkg}

import (
\t"encoding/json"
\t"errors"
\t"fmt"
)

// Message is any TAP 1.0 message; MessageType tells which.
type Message interface {
\tMessageType() string
}

// UnknownTypeError is returned for a type that is not in the TAP 1.0 catalogue.
type UnknownTypeError struct {
\tType string
}

func (e *UnknownTypeError) Error() string {
\treturn fmt.Sprintf("tap: unknown message type %q", e.Type)
}

// MissingMemberError is returned when a required member is absent.
type MissingMemberError struct {
\tPath   string
\tMember string
}

func (e *MissingMemberError) Error() string {
\treturn fmt.Sprintf("tap: %s/%s is required", e.Path, e.Member)
}

func requireMembers(members map[string]json.RawMessage, names []string, path string) error {
\tfor _, n := range names {
\t\tif _, ok := members[n]; !ok {
\t\t\treturn &MissingMemberError{Path: path, Member: n}
\t\t}
\t}
\treturn nil
}

// unknownMembers returns the members of a JSON object that are not among names, or nil.
func unknownMembers(data []byte, names []string) (map[string]json.RawMessage, error) {
\tvar all map[string]json.RawMessage
\tif err := json.Unmarshal(data, &all); err != nil {
\t\treturn nil, err
\t}
\tfor _, n := range names {
\t\tdelete(all, n)
\t}
\tif len(all) == 0 {
\t\treturn nil, nil
\t}
\treturn all, nil
}

// withExtra encodes v, a struct, and adds the members of extra it does not already write.
func withExtra(v interface{}, extra map[string]json.RawMessage) ([]byte, error) {
\tdata, err := json.Marshal(v)
\tif err != nil || len(extra) == 0 {
\t\treturn data, err
\t}
\tvar all map[string]json.RawMessage
\tif err := json.Unmarshal(data, &all); err != nil {
\t\treturn nil, err
\t}
\tfor k, raw := range extra {
\t\tif _, ok := all[k]; !ok {
\t\t\tall[k] = raw
\t\t}
\t}
\treturn json.Marshal(all)
}

// ParseMessage decodes one TAP message, choosing its struct by the member "type".
func ParseMessage(data []byte) (Message, error) {
\tvar members map[string]json.RawMessage
\tif err := json.Unmarshal(data, &members); err != nil || members == nil {
\t\treturn nil, errors.New("tap: a message is a JSON object")
\t}
\tvar t string
\tif raw, ok := members["type"]; !ok || json.Unmarshal(raw, &t) != nil {
\t\treturn nil, errors.New("tap: the message has no string member \\"type\\"")
\t}
\tvar msg Message
\tvar required, payloadRequired []string
\tswitch t {
${cases}
\tdefault:
\t\treturn nil, &UnknownTypeError{Type: t}
\t}
\tif err := requireMembers(members, required, ""); err != nil {
\t\treturn nil, err
\t}
\tvar payload map[string]json.RawMessage
\tif err := json.Unmarshal(members["payload"], &payload); err != nil || payload == nil {
\t\treturn nil, errors.New("tap: /payload is not a JSON object")
\t}
\tif err := requireMembers(payload, payloadRequired, "/payload"); err != nil {
\t\treturn nil, err
\t}
\tif err := json.Unmarshal(data, msg); err != nil {
\t\treturn nil, fmt.Errorf("tap: %s: %w", t, err)
\t}
\treturn msg, nil
}

${out.join('\n\n')}
`;
  return new Map([['tap_types.go', text]]);
}
