-- "My open tasks by due date" pages in the index's order to the last key: with `id` after
-- `dueDate`, the page's statement reads its rows from the index alone instead of sorting all of
-- the assignee's tasks of that status (and all of those without a due date) by id.

-- DropIndex
DROP INDEX "Task_organizationId_assigneeId_status_dueDate_idx";

-- CreateIndex
CREATE INDEX "Task_organizationId_assigneeId_status_dueDate_id_idx" ON "Task"("organizationId", "assigneeId", "status", "dueDate", "id");
