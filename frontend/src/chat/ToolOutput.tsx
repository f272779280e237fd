// A tool call's output in the transcript: its text, and the images it
// returned (toolOutput.ts says which are shown and why others are not).
import { useMemo } from "react";
import { useTranslation } from "react-i18next";
import { useFormat } from "../i18n/format";
import { toolOutput } from "./toolOutput";

export function OutputText({ output }: { output: string | null | undefined }) {
  const { text } = useMemo(() => toolOutput(output), [output]);
  return <pre className="call-output">{text}</pre>;
}

export function OutputImages({ output, tool }: { output: string | null | undefined; tool: string }) {
  const { t } = useTranslation("chat");
  const { number } = useFormat();
  const { images } = useMemo(() => toolOutput(output), [output]);
  if (!images.length) return null;
  const kb = (bytes: number) => number(Math.max(1, Math.ceil(bytes / 1024)));
  return (
    <div className="call-images">
      {images.map((im, i) => {
        const vars = { n: i + 1, tool, type: im.mimeType || "?", size: kb(im.bytes) };
        if (im.kind === "shown") return <img key={i} className="call-image" src={im.src} alt={t("item.image.alt", vars)} />;
        return <p key={i} className="call-image-note">{t(im.kind === "too_large" ? "item.image.tooLarge" : "item.image.notShown", vars)}</p>;
      })}
    </div>
  );
}
