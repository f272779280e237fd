// Safe Markdown for text that comes from a model: raw HTML is dropped, links
// open in a new tab without an opener or a referrer and only with http(s) or
// mailto, and images are not fetched until the person asks for them (an image
// URL can carry data out of the conversation, or track who reads it).
import { memo, useState } from "react";
import { useTranslation } from "react-i18next";
import ReactMarkdown, { defaultUrlTransform, type Components } from "react-markdown";
import remarkGfm from "remark-gfm";
import "./markdown.css";

const linkProtocols = new Set(["http:", "https:", "mailto:"]);
const imageProtocols = new Set(["http:", "https:"]);

/** The URL if it is absolute with an allowed protocol, else "" (no link). */
function allowed(url: string, protocols: Set<string>): string {
  const safe = defaultUrlTransform(url);
  if (!safe) return "";
  try {
    const u = new URL(safe);
    return protocols.has(u.protocol) ? safe : "";
  } catch {
    return ""; // relative or malformed: nothing to open outside the app
  }
}

const urlTransform = (url: string, key: string) => allowed(url, key === "src" ? imageProtocols : linkProtocols);

function hostOf(url: string): string {
  try { return new URL(url).host; } catch { return url; }
}

/** An image that loads only after a click, from the host the button names. */
export function DeferredImage({ src, alt, title }: { src?: string; alt?: string; title?: string }) {
  const { t } = useTranslation("chat");
  const [load, setLoad] = useState(false);
  const text = alt?.trim();
  if (!src) return <span className="md-image-blocked">{text ? t("markdown.imageAlt", { alt: text }) : t("markdown.image")}</span>;
  if (load) {
    return <img className="md-image" src={src} alt={alt ?? ""} title={title} referrerPolicy="no-referrer" loading="lazy" />;
  }
  const host = hostOf(src);
  return (
    <span className="md-image-placeholder">
      <button type="button" className="md-image-load" onClick={() => setLoad(true)} title={src}>
        <svg aria-hidden="true" viewBox="0 0 16 16" width="14" height="14"><path fill="currentColor" d="M2 3h12a1 1 0 0 1 1 1v8a1 1 0 0 1-1 1H2a1 1 0 0 1-1-1V4a1 1 0 0 1 1-1Zm0 1v6.3l3-3 3 3 2-2 4 4V4H2Zm8.5 1.5a1.25 1.25 0 1 1 0 2.5 1.25 1.25 0 0 1 0-2.5Z" /></svg>
        {t("markdown.loadImage", { host })}
      </button>
      {text && <span className="md-image-alt">{text}</span>}
    </span>
  );
}

const components: Components = {
  a: ({ href, children, title }) =>
    href ? (
      <a href={href} title={title ?? href} target="_blank" rel="noopener noreferrer">{children}</a>
    ) : (
      <span className="md-link-dropped">{children}</span>
    ),
  img: ({ src, alt, title }) => <DeferredImage src={typeof src === "string" ? src : undefined} alt={alt} title={title} />,
  pre: ({ children }) => <pre className="md-pre">{children}</pre>,
  table: ({ children }) => (
    <div className="md-table-wrap"><table>{children}</table></div>
  ),
};

/** Renders Markdown (with GitHub extensions) without ever rendering raw HTML. */
export const Markdown = memo(function Markdown({ text, className }: { text: string; className?: string }) {
  return (
    <div className={className ? `markdown ${className}` : "markdown"}>
      <ReactMarkdown remarkPlugins={[remarkGfm]} skipHtml urlTransform={urlTransform} components={components}>
        {text}
      </ReactMarkdown>
    </div>
  );
});
