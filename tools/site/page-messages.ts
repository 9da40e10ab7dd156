/**
 * The message catalogue: an overview of messages.json and one page per message type with its
 * catalogue row, its envelope and payload as field tables, its conditional rules, where the
 * spec defines it, the requirements that name it, and its valid fixtures as examples.
 */
import type { SiteContext } from './context.ts';
import { conditionalRules, fieldRows, fieldTable, mergedProperties } from './fields.ts';
import { codeBlock, esc, rel, sinceNote, sinceTag } from './html.ts';
import type { Page } from './layout.ts';
import { chapterSections } from './page-spec.ts';
import type { MessageEntry } from './sources.ts';

const DIRECTION: Record<MessageEntry['direction'], string> = {
  requester_to_agent: 'requester → agent',
  agent_to_requester: 'agent → requester',
  both: 'either peer',
};

function yes(v: boolean, y = 'yes', n = 'no'): string {
  return v ? `<span class="tag">${y}</span>` : `<span class="tag no">${n}</span>`;
}

function typeLink(page: string, type: string): string {
  return `<a href="${esc(rel(page, `messages/${type}.html`))}"><code>${esc(type)}</code></a>`;
}

/** Which messages list `type` among their replies. */
function repliesTo(ctx: SiteContext, type: string): string[] {
  return ctx.sources.messages.filter((m) => m.replies.includes(type)).map((m) => m.type);
}

/** "When it may be sent", from the catalogue columns. */
function whenSent(m: MessageEntry, ctx: SiteContext, page: string): string {
  const parts: string[] = [];
  parts.push(
    m.before_handshake
      ? 'Before and after the session is established.'
      : `Only once the session is established (after ${typeLink(page, 'handshake.go')}).`,
  );
  const answers = repliesTo(ctx, m.type);
  if (answers.length > 0) parts.push(`As the direct reply to ${answers.map((t) => typeLink(page, t)).join(', ')}.`);
  if (m.task) parts.push('Concerns one task: the envelope carries <code>task_id</code>.');
  return parts.join(' ');
}

function presenceOf(m: MessageEntry) {
  return (name: string, required: boolean): string => {
    if (name === 'reply_to' || name === 'session_id') {
      const v = m[name];
      if (v === 'absent') return 'absent';
      if (v === 'required' || required) return 'required';
      return 'optional';
    }
    return required ? 'required' : 'optional';
  };
}

/** Sections of the spec whose heading names the type, then sections that mention it. */
function specPlaces(
  ctx: SiteContext,
  type: string,
): { defined: string[]; mentioned: Array<{ cite: string; title: string; chapter: string; count: number }> } {
  const defined: string[] = [];
  const mentioned: Array<{ cite: string; title: string; chapter: string; count: number }> = [];
  const needle = `\`${type}\``;
  for (const chapter of ctx.sources.chapters) {
    for (const s of chapterSections(chapter)) {
      const cite = `${chapter.name}#${s.anchor}`;
      if (s.title.trim() === type) defined.push(cite);
      const count = s.markdown.split(needle).length - 1;
      if (count > 0) mentioned.push({ cite, title: s.title, chapter: chapter.label, count });
    }
  }
  return { defined, mentioned };
}

/** Requirements whose sentence names the type. */
function requirementsNaming(ctx: SiteContext, type: string) {
  const re = new RegExp(`(^|[^\\w.])${type.replace(/\./g, '\\.')}(?![\\w]|\\.[a-z])`);
  return ctx.sources.requirements.filter((r) => re.test(r.text));
}

function messagePage(ctx: SiteContext, m: MessageEntry): Page {
  const path = `messages/${m.type}.html`;
  const fctx = ctx.fieldContext(path);
  const schemaFile = `${m.type}.schema.json`;
  const schema = ctx.sources.schemas.get(schemaFile)!;
  const payloadFile = String((schema.properties as Record<string, { $ref?: string }>).payload?.$ref);
  const payload = ctx.sources.schemas.get(payloadFile)!;
  const envelopeRows = fieldRows(schema, fctx, { presence: presenceOf(m) }).map((r) =>
    r.path === 'payload' ? { ...r, type: `<a href="#payload">${esc(String(payload.title ?? 'payload'))}</a>` } : r,
  );
  const payloadRows = fieldRows(payload, fctx);
  const rules = conditionalRules(payload);
  const fixtures = ctx.sources.fixtures.filter((f) => f.type === m.type);
  const { defined, mentioned } = specPlaces(ctx, m.type);
  const reqs = requirementsNaming(ctx, m.type);
  const answers = repliesTo(ctx, m.type);
  const uses = ctx.sources.asyncapi.get(m.type) ?? [];
  const asyncapi = uses.length
    ? `${uses.map((u) => `<code title="${esc(u.title)}">${esc(u.operation)}</code> <span class="muted">(${esc(u.action)}${u.as === 'reply' ? ', as a reply' : ''})</span>`).join(', ')} in <a href="${esc(rel(path, 'asyncapi.yaml'))}"><code>asyncapi.yaml</code></a>`
    : '';
  const raw = (file: string) => `<a href="${esc(rel(path, `schemas/v1/${file}`))}"><code>${esc(file)}</code></a>`;

  const facts = `<dl class="facts">
${m.since ? `<dt>Since</dt><dd>TAP ${esc(m.since)} <span class="muted">(sent only in a session of ${esc(m.since)} or later)</span></dd>\n` : ''}<dt>Direction</dt><dd>${DIRECTION[m.direction]}</dd>
<dt>When it may be sent</dt><dd>${whenSent(m, ctx, path)}</dd>
<dt>Expected reply</dt><dd>${m.replies.length ? `${m.replies.map((t) => typeLink(path, t)).join(' or ')} <span class="muted">(a request: exactly one direct reply, whose <code>reply_to</code> is this <code>message_id</code>)</span>` : '<span class="muted">none; this is not a request</span>'}</dd>
${answers.length ? `<dt>Answers</dt><dd>${answers.map((t) => typeLink(path, t)).join(', ')}</dd>\n` : ''}<dt>Sequenced</dt><dd>${yes(m.sequenced)}${m.sequenced ? ' <span class="muted">part of its task stream; carries <code>sequence</code></span>' : ''}</dd>
<dt>Before handshake</dt><dd>${yes(m.before_handshake, 'allowed', 'not allowed')}</dd>
<dt><code>reply_to</code></dt><dd>${esc(m.reply_to)}</dd>
<dt><code>session_id</code></dt><dd>${esc(m.session_id)}</dd>
<dt>Schemas</dt><dd>${raw(schemaFile)} · ${raw(payloadFile)}</dd>
${
  asyncapi
    ? `<dt>AsyncAPI</dt><dd>${asyncapi}</dd>
`
    : ''
}</dl>`;

  const definedHtml = defined.length
    ? `<p>Specified in ${defined.map((c) => `<a href="${esc(rel(path, ctx.anchorPath(c)))}"><code>${esc(c)}</code></a>`).join(', ')}.</p>`
    : '';
  const mentionedHtml = mentioned.length
    ? `<details><summary>Mentioned in ${mentioned.length} section${mentioned.length === 1 ? '' : 's'} of the spec</summary><ul>${mentioned
        .map(
          (s) =>
            `<li><a href="${esc(rel(path, ctx.anchorPath(s.cite)))}">${esc(s.chapter)}: ${esc(s.title)}</a> <span class="muted">(${s.count}×)</span></li>`,
        )
        .join('')}</ul></details>`
    : '';
  const reqHtml = reqs.length
    ? `<details${reqs.length <= 6 ? ' open' : ''}><summary>${reqs.length} requirement${reqs.length === 1 ? '' : 's'} name <code>${esc(m.type)}</code></summary><ul class="req-list">${reqs
        .map(
          (r) =>
            `<li><a class="req-id req-${r.level.toLowerCase()}" href="${esc(rel(path, `${ctx.requirementsPath()}#${r.id}`))}">${r.id}</a>${sinceTag(r.since)} ${esc(r.text)}</li>`,
        )
        .join('')}</ul></details>`
    : '';
  const examples = fixtures.length
    ? fixtures
        .map(
          (f) =>
            `<h3 id="example-${esc(f.scenario)}">${esc(f.scenario.replace(/-/g, ' '))}<a class="anchor" href="#example-${esc(f.scenario)}" aria-label="Link to this example">#</a></h3>\n${codeBlock(f.text, 'json')}`,
        )
        .join('\n')
    : '<p class="muted">No fixture of this type yet.</p>';

  const body = `<div class="breadcrumb"><a href="${esc(rel(path, 'messages/index.html'))}">Messages</a> / ${esc(m.type)}</div>
<h1 id="top"><code>${esc(m.type)}</code>${sinceTag(m.since)}</h1>
<p class="lead">${esc(String(schema.description ?? m.description))}</p>
${facts}
<h2 id="spec">In the specification<a class="anchor" href="#spec" aria-label="Link to this section">#</a></h2>
${definedHtml}${mentionedHtml}${reqHtml}
<h2 id="envelope">Envelope<a class="anchor" href="#envelope" aria-label="Link to this section">#</a></h2>
<p>The members every message carries (<a href="${esc(rel(path, 'schemas/index.html#envelope'))}">Envelope</a>), as this type constrains them.</p>
${fieldTable(envelopeRows)}
<h2 id="payload">Payload: ${esc(String(payload.title ?? ''))}<a class="anchor" href="#payload" aria-label="Link to this section">#</a></h2>
<p>${esc(String(payload.description ?? ''))}</p>
${payloadRows.length ? fieldTable(payloadRows) : '<p class="muted">An empty object: <code>{}</code>. Unknown members are ignored.</p>'}
${rules.length ? `<h3 id="rules">Conditional rules<a class="anchor" href="#rules" aria-label="Link to this section">#</a></h3><ul class="rules">${rules.map((r) => `<li>${r}</li>`).join('')}</ul>` : ''}
<h2 id="examples">Examples<a class="anchor" href="#examples" aria-label="Link to this section">#</a></h2>
<p class="muted">Valid messages from <code>fixtures/messages/${esc(m.type)}/</code>; each passes <code>${esc(schemaFile)}</code>.</p>
${examples}`;

  ctx.search.push({
    t: m.type,
    u: path,
    k: 'Message',
    x: `${m.description} ${String(schema.description ?? '')} ${payloadRows.map((r) => r.path).join(' ')}`,
  });
  return {
    path,
    title: m.type,
    body,
    current: 'messages/index.html',
    wide: true,
    toc: [
      { anchor: 'spec', title: 'In the specification' },
      { anchor: 'envelope', title: 'Envelope' },
      { anchor: 'payload', title: 'Payload' },
      { anchor: 'examples', title: 'Examples' },
    ],
    description: `${ctx.label} message ${m.type}: ${m.description}`,
  };
}

/** The catalogue overview and one page per type. */
export function messagePages(ctx: SiteContext): Page[] {
  const path = 'messages/index.html';
  const union = ctx.sources.schemas.get('message.schema.json')!;
  const rows = ctx.sources.messages
    .map(
      (m) =>
        `<tr id="${esc(m.type)}"${m.since ? ` data-since="${esc(m.since)}"` : ''}><td>${typeLink(path, m.type)}${sinceTag(m.since)}</td><td>${DIRECTION[m.direction]}</td>` +
        `<td>${m.replies.length ? m.replies.map((t) => typeLink(path, t)).join('<br>') : '<span class="muted">—</span>'}</td>` +
        `<td>${yes(m.before_handshake)}</td><td>${yes(m.task)}</td><td>${yes(m.sequenced)}</td><td>${esc(m.description)}</td></tr>`,
    )
    .join('\n');
  const envelopeFields = Object.keys(mergedProperties(ctx.sources.schemas.get('envelope.schema.json')!, ctx.fieldContext(path)));
  const body = `<h1 id="messages">Message catalogue</h1>
<p class="lead">The ${ctx.sources.messages.length} message types of ${esc(ctx.label)}, from the normative table <a href="${esc(rel(path, 'schemas/v1/messages.json'))}"><code>messages.json</code></a>.${sinceNote(ctx.sources.messages, 'type')} <a href="${esc(rel(path, 'spec/messages.html'))}">Messages</a> explains the columns.</p>
<p>Every message is one JSON object with the <a href="${esc(rel(path, 'schemas/index.html#envelope'))}">envelope</a> members (${envelopeFields.map((f) => `<code>${esc(f)}</code>`).join(', ')}) and a type-specific <code>payload</code>. <code>message.schema.json</code> is the union of all types, discriminated by <code>${esc(String((union.discriminator as { propertyName?: string } | undefined)?.propertyName ?? 'type'))}</code>.</p>
<div class="table-wrap"><table>
<thead><tr><th>Type</th><th>Direction</th><th>Replies</th><th>Before handshake</th><th>Task</th><th>Sequenced</th><th>Purpose</th></tr></thead>
<tbody>
${rows}
</tbody></table></div>`;
  ctx.search.push({
    t: 'Message catalogue',
    u: path,
    k: 'Reference',
    x: `Every message type of ${ctx.label}: direction, replies, sequencing.`,
  });
  return [
    { path, title: 'Message catalogue', body, wide: true, description: `The ${ctx.label} message catalogue.` },
    ...ctx.sources.messages.map((m) => messagePage(ctx, m)),
  ];
}
