// Chat replies as Markdown: marked (GitHub's flavour: tables, nested lists,
// strikethrough, task lists), code highlighted by highlight.js for the
// languages models write most. HTML in a reply shows as text, a link that
// is not http(s) as its text, and everything passes DOMPurify besides, so
// only plain formatting reaches the page: no scripts, no styles, links
// opened in a new tab. Code blocks carry a Copy button
// (Chat.svelte handles its click).
import { Marked } from 'marked'
import DOMPurify from 'dompurify'
import hljs from 'highlight.js/lib/core'
import bash from 'highlight.js/lib/languages/bash'
import c from 'highlight.js/lib/languages/c'
import cpp from 'highlight.js/lib/languages/cpp'
import css from 'highlight.js/lib/languages/css'
import go from 'highlight.js/lib/languages/go'
import java from 'highlight.js/lib/languages/java'
import javascript from 'highlight.js/lib/languages/javascript'
import json from 'highlight.js/lib/languages/json'
import python from 'highlight.js/lib/languages/python'
import rust from 'highlight.js/lib/languages/rust'
import sql from 'highlight.js/lib/languages/sql'
import typescript from 'highlight.js/lib/languages/typescript'
import xml from 'highlight.js/lib/languages/xml'
import yaml from 'highlight.js/lib/languages/yaml'

for (const [name, lang] of Object.entries({ bash, c, cpp, css, go, java, javascript, json, python, rust, sql, typescript, xml, yaml })) {
  hljs.registerLanguage(name, lang)
}

export function escapeHTML(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!)
}

const md = new Marked({
  gfm: true,
  breaks: true, // a model's single newlines are line breaks, as people read them
  renderer: {
    // HTML in a reply is text to read (a model explaining <div>), never markup.
    html({ text }) {
      return escapeHTML(text)
    },
    // A link that is not http(s) is its text alone.
    link({ href, tokens }) {
      const label = this.parser.parseInline(tokens)
      if (!/^https?:\/\//i.test(href)) return label
      return `<a href="${escapeHTML(href)}">${label}</a>`
    },
    code({ text, lang }) {
      const name = (lang ?? '').trim().split(/\s+/)[0].toLowerCase()
      const known = name && hljs.getLanguage(name)
      const body = known ? hljs.highlight(text, { language: name, ignoreIllegals: true }).value : escapeHTML(text)
      const tag = name ? ` data-lang="${escapeHTML(name)}"` : ''
      return `<pre${tag}><button type="button" class="copy-code" data-testid="copy-code">Copy</button><code class="hljs">${body}</code></pre>`
    },
  },
})

// Links: http(s) only, in a new tab that cannot reach back to this page.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    const href = node.getAttribute('href') ?? ''
    if (!/^https?:\/\//i.test(href)) node.removeAttribute('href')
    node.setAttribute('target', '_blank')
    node.setAttribute('rel', 'noopener noreferrer')
  }
})

export function renderMarkdown(src: string): string {
  const html = md.parse(src, { async: false }) as string
  return DOMPurify.sanitize(html, {
    ALLOWED_TAGS: ['p', 'br', 'strong', 'em', 'del', 'code', 'pre', 'span', 'a', 'ul', 'ol', 'li', 'blockquote',
      'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'input', 'button'],
    ALLOWED_ATTR: ['href', 'target', 'rel', 'class', 'data-lang', 'data-testid', 'type', 'checked', 'disabled', 'align'],
  })
}
