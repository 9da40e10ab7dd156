/**
 * What every page builder shares: the sources, the requirement → case links, where each
 * source file lives on the site (chapters, schema files, data tables), and the search index
 * the pages add to. A context is that of one version of the spec (its edition): its chapters
 * and requirement index are the version's; the current version's pages sit at the root of the
 * site, an older one's under `<version>/`.
 */
import { posix } from 'node:path';
import type { FieldContext } from './fields.ts';
import { rel } from './html.ts';
import type { RenderContext } from './markdown.ts';
import { linkRequirements, type RequirementLinks } from './requirement-links.ts';
import type { Edition, Sources } from './sources.ts';

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
  readonly sources: Sources;
  readonly links: RequirementLinks;
  readonly messageTypes: Set<string>;
  readonly errorCodes: Set<string>;
  readonly requirementsById: Map<string, Sources['requirements'][number]>;
  /** Requirement id → the errata that added or changed it, oldest first. */
  readonly errataByRequirement = new Map<string, string[]>();
  readonly shared: string[];
  readonly search: SearchDoc[];
  /** The version this context renders. */
  readonly edition: Edition;

  /**
   * The context of one version (by default the current one). `sources.chapters` and
   * `sources.requirements` are that version's; `search` is shared by the contexts of one build.
   */
  constructor(sources: Sources, version?: string, search: SearchDoc[] = []) {
    const edition = version === undefined ? sources.editions[0] : sources.editions.find((e) => e.version === version);
    if (!edition) throw new Error(`the spec has no version ${version}; it has ${sources.editions.map((e) => e.version).join(', ')}`);
    this.edition = edition;
    this.sources = { ...sources, chapters: edition.chapters, requirements: edition.requirements };
    this.search = search;
    this.links = linkRequirements(this.sources.requirements, sources.cases);
    this.messageTypes = new Set(sources.messages.map((m) => m.type));
    this.errorCodes = new Set(sources.errors.map((e) => e.code));
    this.requirementsById = new Map(this.sources.requirements.map((r) => [r.id, r]));
    this.shared = sharedSchemaFiles(sources);
    for (const e of sources.errata)
      for (const r of e.requirements) this.errataByRequirement.set(r, [...(this.errataByRequirement.get(r) ?? []), e.id]);
  }

  /** The site path of a chapter of this version, or of `version`. */
  chapterPath(name: string, version = this.edition.version): string {
    const prefix = this.prefixOf(version);
    return name === 'index' ? `${prefix}index.html` : `${prefix}spec/${name}.html`;
  }

  /** The site path of the requirement index of this version, or of `version`. */
  requirementsPath(version = this.edition.version): string {
    return `${this.prefixOf(version)}requirements.html`;
  }

  /** Where the site publishes the requirements.json of a version (1.0's at its first place, spec/requirements.json). */
  requirementsJsonPath(version = this.edition.version): string {
    return version === '1.0' ? 'spec/requirements.json' : `spec/${version}/requirements.json`;
  }

  /** The label of this version for people: "TAP 1.1", "TAP 1.0". */
  get label(): string {
    return `TAP ${this.edition.version}`;
  }

  /** The path prefix of a version's pages. */
  private prefixOf(version: string): string {
    const e = this.sources.editions.find((x) => x.version === version);
    if (!e) throw new Error(`the spec has no version ${version}`);
    return e.prefix;
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
   * Rewrites a link of a chapter (relative to spec/<version>/) to a site path; returns the link
   * unchanged when it is external, a bare fragment, or names nothing the site has (the link
   * check then reports it). A link into another version's folder goes to that version's pages.
   */
  specLink(href: string): string | null {
    if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('#')) return null;
    const hash = href.indexOf('#');
    const path = hash === -1 ? href : href.slice(0, hash);
    const fragment = hash === -1 ? '' : href.slice(hash);
    const resolved = posix.normalize(posix.join(`spec/${this.edition.version}`, path));
    const published = (v: string) => this.sources.editions.some((e) => e.version === v);
    const chapter = /^spec\/(\d+\.\d+)\/([a-z0-9-]+)\.md$/.exec(resolved);
    if (chapter && published(chapter[1]!)) return this.chapterPath(chapter[2]!, chapter[1]!) + fragment;
    const index = /^spec\/(\d+\.\d+)\/requirements\.json$/.exec(resolved);
    if (index && published(index[1]!)) return this.requirementsPath(index[1]!) + fragment;
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

  /** The Markdown context for a page at `page` whose Markdown links are relative to spec/<version>/ of this context. */
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
        return r ? { href: rel(page, `${this.requirementsPath()}#${id}`), level: r.level } : null;
      },
    };
  }

  /** The site path for inline code that names a requirement id, a message type, an error code or a data table. */
  codeTarget(code: string): string | null {
    if (this.requirementsById.has(code)) return `${this.requirementsPath()}#${code}`;
    if (this.messageTypes.has(code)) return `messages/${code}.html`;
    if (this.errorCodes.has(code)) return `errors.html#${code}`;
    if (code === 'task-states.json') return 'states.html';
    if (code === 'error-codes.json') return 'errors.html';
    if (code === 'messages.json') return 'messages/index.html';
    if (code === 'requirements.json') return this.requirementsPath();
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
