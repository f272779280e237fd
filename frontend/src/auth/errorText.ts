// The words for a failure. The API's own sentence is shown as it is (the
// server writes English); what the app itself would say (Toolgate could not
// be reached, a proxy's page instead of an answer) is translated.
import { useCallback } from "react";
import { useTranslation } from "react-i18next";
import { ApiError } from "../api/client";

export function useErrorText(): (err: unknown) => string {
  const { t } = useTranslation("common");
  return useCallback((err: unknown) => {
    if (err instanceof ApiError) {
      if (err.code === "network_error") return t("error.network");
      if (err.code === `http_${err.status}`) return t("error.http", { status: err.status });
      return err.message;
    }
    if (err instanceof Error && err.message) return err.message;
    return t("error.unknown");
  }, [t]);
}
