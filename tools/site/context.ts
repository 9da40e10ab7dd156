/**
 * What every page builder shares: the sources, the requirement → case links, where each
 * source file lives on the site (chapters, schema files, data tables), and the search index
 * the pages add to.
 */
import { posix } from 'node:path';
import type { FieldContext } from './fields.ts';
import { rel } from './html.ts';
import type { RenderContext } from './markdown.ts';
import { linkRequirements, type RequirementLinks } from './requirement-links.ts';
import type { Sources } from './sources.ts';

/** One entry of the search index; `u` is a site path. */
export interface SearchDoc {
  t: string;
  u: string;
  k: string;
  x: string;
}

/** Schema files that get their own section on schemas/index.html (everything but messages and payloads). */
export function sharedSchemaFiles(sources: Sources): string[] {
  const types = new Set(sources.messages.map((m) => m.type));
  return [...sources.schemas.keys()].filter((f) => {
    const base = f.replace(/\.schema\.json$/, '');
    return !types.has(base) && !types.has(base.replace(/\.payload$/, '')) && f !== 'message.schema.json';
  });
}

/** The anchor of a shared schema on schemas/index.html: its file name without `.schema.json`. */
export function schemaAnchor(file: string): string {
  return file.replace(/\.schema\.json$/, '');
}

export class SiteContext {
  readonly links: RequirementLinks;
  readonly messageTypes: Set<string>;
  readonly errorCodes: Set<string>;
  readonly requirementsById: Map<string, Sources['requirements'][number]>;
  /** Requirement id → the errata that added or changed it, oldest first. */
  readonly errataByRequirement = new Map<string, string[]>();
  readonly shared: string[];
  readonly search: SearchDoc[] = [];

  constructor(readonly sources: Sources) {
    this.links = linkRequirements(sources.requirements, sources.cases);
    this.messageTypes = new Set(sources.messages.map((m) => m.type));
    this.errorCodes = new Set(sources.errors.map((e) => e.code));
    this.requirementsById = new Map(sources.requirements.map((r) => [r.id, r]));
    this.shared = sharedSchemaFiles(sources);
    for (const e of sources.errata)
      for (const r of e.requirements) this.errataByRequirement.set(r, [...(this.errataByRequirement.get(r) ?? []), e.id]);
  }

  /** The site path of a chapter. */
  chapterPath(name: string): string {
    return name === 'index' ? 'index.html' : `spec/${name}.html`;
  }

  /** The site path (with fragment) that shows a schema file of schemas/v1, or null if none does. */
  schemaPath(file: string): string | null {
    if (file === 'message.schema.json') return 'messages/index.html';
    const base = file.replace(/\.schema\.json$/, '');
    if (this.messageTypes.has(base)) return `messages/${base}.html`;
    if (base.endsWith('.payload') && this.messageTypes.has(base.slice(0, -'.payload'.length)))
      return `messages/${base.slice(0, -'.payload'.length)}.html#payload`;
    if (this.shared.includes(file)) return `schemas/index.html#${schemaAnchor(file)}`;
    return null;
  }

  /** The site path for a file of schemas/v1 (schemas and data tables). */
  schemaDirPath(file: string): string | null {
    switch (file) {
      case '':
        return 'schemas/index.html';
      case 'messages.json':
        return 'messages/index.html';
      case 'task-states.json':
        return 'states.html';
      case 'error-codes.json':
        return 'errors.html';
      default:
        return file.endsWith('.schema.json') ? this.schemaPath(file) : null;
    }
  }

  /**
   * Rewrites a link of a chapter (relative to spec/1.0/) to a site path; returns the link
   * unchanged when it is external, a bare fragment, or names nothing the site has (the link
   * check then reports it).
   */
  specLink(href: string): string | null {
    if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('#')) return null;
    const hash = href.indexOf('#');
    const path = hash === -1 ? href : href.slice(0, hash);
    const fragment = hash === -1 ? '' : href.slice(hash);
    const resolved = posix.normalize(posix.join('spec/1.0', path));
    const chapter = /^spec\/1\.0\/([a-z0-9-]+)\.md$/.exec(resolved);
    if (chapter) return this.chapterPath(chapter[1]!) + fragment;
    if (resolved === 'spec/1.0/requirements.json') return `requirements.html${fragment}`;
    if (resolved === 'spec/1.0/errata.json') return `errata.html${fragment}`;
    if (resolved === 'spec/1.0/first-text.json') return 'errata.html#first-text';
    if (resolved.startsWith('spec/1.0/examples/')) return `spec/examples/${resolved.slice('spec/1.0/examples/'.length)}`;
    const schema = /^schemas\/v1\/?(.*)$/.exec(resolved);
    if (schema) {
      const target = this.schemaDirPath(schema[1]!);
      if (target) return target.includes('#') || !fragment ? target : target + fragment;
    }
    return null;
  }

  /** The Markdown context for a page at `page` whose Markdown links are relative to spec/1.0/. */
  renderContext(page: string, linksFromSpec = true): RenderContext {
    return {
      link: (href) => {
        // "/x.html" in the site's own pages is a path from the site root.
        if (href.startsWith('/') && !href.startsWith('//')) return rel(page, href.slice(1));
        const target = linksFromSpec ? this.specLink(href) : null;
        return target === null ? href : rel(page, target);
      },
      codeLink: (code) => {
        const target = this.codeTarget(code);
        return target && target !== page ? rel(page, target) : null;
      },
      requirement: (id) => {
        const r = this.requirementsById.get(id);
        return r ? { href: rel(page, `requirements.html#${id}`), level: r.level } : null;
      },
    };
  }

  /** The site path for inline code that names a message type, an error code or a data table. */
  codeTarget(code: string): string | null {
    if (this.messageTypes.has(code)) return `messages/${code}.html`;
    if (this.errorCodes.has(code)) return `errors.html#${code}`;
    if (code === 'task-states.json') return 'states.html';
    if (code === 'error-codes.json') return 'errors.html';
    if (code === 'messages.json') return 'messages/index.html';
    if (code === 'requirements.json') return 'requirements.html';
    if (code === 'errata.json') return 'errata.html';
    return null;
  }

  /** The field-table context for a page. */
  fieldContext(page: string): FieldContext {
    return {
      schemas: this.sources.schemas,
      linkFor: (file) => {
        if (file === 'identifier.schema.json' || this.shared.includes(file)) return rel(page, `schemas/index.html#${schemaAnchor(file)}`);
        return null;
      },
    };
  }

  /** The href of a requirement's sentence in its chapter. */
  requirementSentence(id: string): string {
    const r = this.requirementsById.get(id)!;
    return `${this.chapterPath(r.chapter)}#${id}`;
  }

  /** Whether a `<chapter>#<anchor>` citation names a chapter and anchor of the spec. */
  citeExists(cite: string): boolean {
    const [chapter, anchor] = cite.split('#');
    const c = this.sources.chapters.find((x) => x.name === chapter);
    return !!c && (anchor === undefined || c.parsed.anchors.has(anchor));
  }

  /** The site path of a `<chapter>#<anchor>` citation. */
  anchorPath(cite: string): string {
    const [chapter, anchor] = cite.split('#');
    return this.chapterPath(chapter!) + (anchor ? `#${anchor}` : '');
  }
}
